import { useRef, useState, type DragEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { getClient } from '../../client';
import { useDemoStore } from '../../stores/useDemoStore';

/** Drop or pick an image, several frames, or (by path) a folder of frames. */
export function MediaPicker() {
  const media = useDemoStore(useShallow((s) => s.media));
  const isVideo = useDemoStore((s) => s.isVideo);
  const importing = useDemoStore((s) => s.importing);
  const importError = useDemoStore((s) => s.importError);
  const uploadFiles = useDemoStore((s) => s.uploadFiles);
  const importPaths = useDemoStore((s) => s.importPaths);
  const clearMedia = useDemoStore((s) => s.clearMedia);
  const examples = useDemoStore(useShallow((s) => s.examples));
  const examplesState = useDemoStore((s) => s.examplesState);
  const pickExample = useDemoStore((s) => s.pickExample);
  const tinyLocal = useDemoStore((s) => s.engineKind === 'local' && s.localModelId === 'loupe-tiny');
  const [over, setOver] = useState(false);
  const [pathText, setPathText] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const mediaUrl = getClient().mediaUrl;

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    const files = [...e.dataTransfer.files].filter((f) => f.type.startsWith('image/') || /\.(jpe?g|png|webp|gif|bmp|tiff?)$/i.test(f.name));
    if (files.length) void uploadFiles(files);
  };
  return (
    <div className="demo-media">
      <div
        className={`demo-drop${over ? ' over' : ''}`}
        data-testid="drop-zone"
        onDragOver={(e) => (e.preventDefault(), setOver(true))}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
        onClick={() => input.current?.click()}
        role="button"
        tabIndex={0}
        onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && input.current?.click()}
      >
        {media.length ? (
          <div className="demo-thumbs">
            {media.slice(0, 8).map((m, i) => (
              <img key={`${m.id}-${i}`} src={mediaUrl(m.id)} alt={isVideo ? `frame ${i + 1}` : `image ${i + 1}`} />
            ))}
            {media.length > 8 ? <span className="muted">+{media.length - 8}</span> : null}
          </div>
        ) : (
          <span className="muted">{importing ? 'Importing…' : 'Drop an image (or several frames of a video) here, or click to pick'}</span>
        )}
        <input ref={input} type="file" accept="image/*" multiple hidden data-testid="file-input" onChange={(e) => e.target.files && void uploadFiles([...e.target.files])} />
      </div>
      <div className="demo-row">
        <input className="input grow" placeholder="…or a path on the machine running Loupe (image, or folder of frames)" value={pathText} onChange={(e) => setPathText(e.target.value)} data-testid="media-path" />
        <button type="button" className="btn" disabled={!pathText.trim() || importing} onClick={() => void importPaths(pathText.split('\n').map((p) => p.trim()).filter(Boolean))}>Open</button>
        {media.length ? <button type="button" className="btn" onClick={clearMedia}>Clear</button> : null}
      </div>
      {media.length ? <div className="muted" data-testid="media-summary">{isVideo ? `video: ${media.length} frames` : `${media.length} image${media.length > 1 ? 's' : ''}`} · {media[0]!.width}×{media[0]!.height}</div> : null}
      {importError ? <div className="demo-error" role="alert" data-testid="import-error">{importError}</div> : null}
      {/* loupe-tiny was trained on loupe-synth scenes only: on a photo it still answers, about rings and tags that are not
          there. One line, not a block: the user may want to see exactly that. */}
      {tinyLocal && media.length && !examples.some((ex) => ex.media.some((m) => m.id === media[0]!.id)) ? (
        <div
          className="muted demo-tiny-notice"
          data-testid="tiny-notice"
          title="loupe-tiny was trained on loupe-synth scenes only (rings, tags, dot boxes, tag pairs): on other images its answers are not about the image"
          style={{ whiteSpace: 'nowrap', overflow: 'hidden', textOverflow: 'ellipsis' }}
        >
          loupe-tiny knows only loupe-synth scenes.
        </div>
      ) : null}
      {examples.length || examplesState !== 'ready' ? (
        <div className="demo-examples" data-testid="examples" data-state={examplesState}>
          <span className="muted">{examplesState === 'error' ? 'The example scenes could not be loaded (see the message above).' : examples.length ? 'Try a loupe-synth scene with loupe-tiny:' : 'Loading the example scenes…'}</span>
          {examples.map((ex) => (
            <button type="button" key={ex.id} className="demo-example" title={`${ex.title} (answer: ${ex.answer})`} onClick={() => pickExample(ex.id)} data-testid={`example-${ex.id}`}>
              <img src={mediaUrl(ex.media[0]!.id)} alt={ex.title} />
              <span>{ex.question}</span>
            </button>
          ))}
        </div>
      ) : null}
    </div>
  );
}
