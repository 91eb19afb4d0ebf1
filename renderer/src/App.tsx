import { useEffect } from 'react';
import { useAppStore } from './stores/useAppStore';
import { NavBar } from './components/NavBar';
import { StatusBar } from './components/StatusBar';
import { PageView } from './components/PageView';
import { useThemeClass } from './components/useThemeClass';

export function App() {
  const init = useAppStore((s) => s.init);
  const error = useAppStore((s) => s.error);
  useEffect(() => {
    void init();
  }, [init]);
  useThemeClass();
  return (
    <div className="app">
      <NavBar />
      <main className="content">
        {error ? <div className="banner banner-error" role="alert">Cannot reach the Loupe core: {error}</div> : null}
        <PageView />
      </main>
      <StatusBar />
    </div>
  );
}
