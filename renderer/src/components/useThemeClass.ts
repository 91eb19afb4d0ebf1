import { useEffect } from 'react';
import { useAppStore } from '../stores/useAppStore';

/** Applies the theme setting to <html data-theme>, following the OS when set to 'system'. */
export function useThemeClass(): void {
  const theme = useAppStore((s) => s.settings?.theme ?? 'system');
  useEffect(() => {
    const media = window.matchMedia('(prefers-color-scheme: dark)');
    const apply = () => {
      const resolved = theme === 'system' ? (media.matches ? 'dark' : 'light') : theme;
      document.documentElement.dataset.theme = resolved;
    };
    apply();
    media.addEventListener('change', apply);
    return () => media.removeEventListener('change', apply);
  }, [theme]);
}
