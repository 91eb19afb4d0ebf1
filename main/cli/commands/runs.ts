/** `loupe runs …` — list, rename, tag, delete (to the trash), restore, empty the trash, locate images. */
import type { Command } from 'commander';
import path from 'node:path';
import type { Workspace } from '../../../app/workspace';

interface WsOpt {
  workspace?: string;
}

async function open(o: WsOpt): Promise<Workspace> {
  const { defaultWorkspaceDir, Workspace } = await import('../../../app/workspace');
  return new Workspace(path.resolve(o.workspace ?? defaultWorkspaceDir())).init();
}

const out = (line: string) => process.stdout.write(`${line}\n`);

export function register(program: Command): void {
  const runs = program.command('runs').description('Manage the runs of a workspace: list, rename, tag, delete to the trash, restore');
  const ws = (c: Command) => c.option('--workspace <dir>', 'workspace folder (default: $LOUPE_WORKSPACE or the user data dir)');

  ws(runs.command('list').description('List runs: id, name, tags, bench, samples'))
    .option('--trash', 'list the runs in the trash instead')
    .action(async (o: WsOpt & { trash?: boolean }) => {
      const w = await open(o);
      const list = o.trash ? await w.runs.listTrash() : await w.runs.listRuns();
      for (const r of list) {
        if (!r.manifest) {
          out(`${r.id}\t(unreadable: ${r.error ?? 'no manifest'})`);
          continue;
        }
        const m = r.manifest;
        const tags = m.tags?.length ? `[${m.tags.join(', ')}]` : '';
        out([r.id, m.name ?? '', tags, m.bench?.id ?? '', m.kind].join('\t'));
      }
      if (list.length === 0) out(o.trash ? '(the trash is empty)' : '(no runs)');
    });

  ws(runs.command('rename').description('Give a run a new name (names are unique)'))
    .argument('<run-id>')
    .argument('<name>')
    .action(async (id: string, name: string, o: WsOpt) => {
      const m = await (await open(o)).runs.renameRun(id, name);
      out(`run ${id} is now named "${m.name ?? ''}"`);
    });

  ws(runs.command('tag').description('Add or remove tags of a run'))
    .argument('<run-id>')
    .argument('[tags...]', 'tags to add')
    .option('--remove <tag...>', 'tags to remove')
    .option('--clear', 'remove every tag first')
    .action(async (id: string, add: string[], o: WsOpt & { remove?: string[]; clear?: boolean }) => {
      const w = await open(o);
      const cur = o.clear ? [] : ((await w.runs.readManifest(id)).tags ?? []);
      const drop = new Set(o.remove ?? []);
      const m = await w.runs.setTags(id, [...cur, ...add].filter((t) => !drop.has(t)));
      out(`run ${id}: tags ${m.tags?.length ? m.tags.join(', ') : '(none)'}`);
    });

  ws(runs.command('rm').description('Move runs to the trash (restore with `runs restore`, delete for good with `runs empty-trash`)'))
    .argument('<run-id...>')
    .action(async (ids: string[], o: WsOpt) => {
      const w = await open(o);
      for (const id of ids) {
        await w.runs.trashRun(id);
        out(`run ${id} moved to the trash`);
      }
    });

  ws(runs.command('restore').description('Bring runs back from the trash'))
    .argument('<run-id...>')
    .action(async (ids: string[], o: WsOpt) => {
      const w = await open(o);
      for (const id of ids) {
        await w.runs.restoreRun(id);
        out(`run ${id} restored`);
      }
    });

  ws(runs.command('empty-trash').description('Delete the runs in the trash for good'))
    .action(async (o: WsOpt) => {
      const n = await (await open(o)).runs.emptyTrash();
      out(`deleted ${n} run(s) for good`);
    });

  ws(runs.command('locate-images').description("Attach a run's images from a folder, by the file names its records give"))
    .argument('<run-id>')
    .argument('<folder>')
    .action(async (id: string, folder: string, o: WsOpt) => {
      const w = await open(o);
      const [{ imageOpsFor }, { attachRunImages }] = await Promise.all([import('../../core/wiring'), import('../../../app/importers/attach')]);
      const ops = await imageOpsFor(w.media);
      try {
        const r = await attachRunImages(w.runs, id, path.resolve(folder), ops);
        out(`run ${id}: images attached to ${r.attached} sample(s), ${r.missing.length} still without an image (${r.folderImages} image file(s) under ${folder})`);
      } finally {
        await ops.close?.();
      }
    });
}
