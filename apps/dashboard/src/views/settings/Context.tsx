import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../../context';
import { dataOf, fileUpload, type Schemas } from '../../lib/api';
import { formatTime } from '../../lib/format';

type ContextFile = Schemas['ContextFile'];
type ContextUrl = Schemas['ContextUrl'];

export const fileSize = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;

/**
 * What the assistant knows of the company: uploaded text files and pages it keeps in sync;
 * `onChanged` after every change made here.
 */
export function Context({ onChanged }: { onChanged: () => void }) {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_settings');
  const [files, setFiles] = useState<ContextFile[]>([]);
  const [urls, setUrls] = useState<ContextUrl[]>([]);
  const [url, setUrl] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<'file' | 'url' | null>(null);
  const id = session.account.id;

  const load = useCallback(async () => {
    const [fileList, urlList] = await Promise.all([
      api.GET('/accounts/{id}/context/files', { params: { path: { id } } }).then(dataOf),
      api.GET('/accounts/{id}/context/urls', { params: { path: { id } } }).then(dataOf),
    ]);
    setFiles(fileList.files);
    setUrls(urlList.urls);
  }, [api, id]);
  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);

  const act = async (kind: 'file' | 'url' | null, action: () => Promise<unknown>) => {
    setError(null);
    setBusy(kind);
    try {
      await action();
      await load();
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section className="panel" aria-label="Company context">
      <h2>Company context</h2>
      <p className="sub">
        Text files and web pages the assistant uses to answer questions about your company.
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <h3>Files</h3>
      <ul className="context-list" aria-label="Context files">
        {files.map((file) => (
          <li key={file.id}>
            <span className="name">{file.name}</span>
            <span className="sub">{fileSize(file.file_size)}</span>
            {canManage && (
              <button
                className="link"
                aria-label={`Remove ${file.name}`}
                onClick={() =>
                  void act(null, () =>
                    api.DELETE('/accounts/{id}/context/files/{file_id}', {
                      params: { path: { id, file_id: file.id } },
                    }),
                  )
                }
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {files.length === 0 && <p className="empty">No files yet.</p>}
      {canManage && (
        <label className="button secondary">
          {busy === 'file' ? 'Uploading…' : 'Upload .txt or .md'}
          <input
            type="file"
            accept=".txt,.md,text/plain,text/markdown"
            aria-label="Upload context file"
            hidden
            onChange={(event) => {
              const file = event.target.files?.[0];
              event.target.value = '';
              if (file) {
                void act('file', () =>
                  api.POST('/accounts/{id}/context/files', {
                    params: { path: { id } },
                    body: fileUpload(file),
                  }),
                );
              }
            }}
          />
        </label>
      )}
      <h3>Web pages</h3>
      <ul className="context-list" aria-label="Context pages">
        {urls.map((page) => (
          <ContextPage
            key={page.id}
            page={page}
            onRemove={
              canManage
                ? () =>
                    void act(null, () =>
                      api.DELETE('/accounts/{id}/context/urls/{url_id}', {
                        params: { path: { id, url_id: page.id } },
                      }),
                    )
                : undefined
            }
          />
        ))}
      </ul>
      {urls.length === 0 && <p className="empty">No pages yet.</p>}
      {canManage && (
        <form
          className="add-requirement"
          onSubmit={(event) => {
            event.preventDefault();
            if (!url.trim()) return;
            void act('url', async () => {
              await api.POST('/accounts/{id}/context/urls', {
                params: { path: { id } },
                body: { url: url.trim() },
              });
              setUrl('');
            });
          }}
        >
          <input
            type="url"
            aria-label="Page address"
            placeholder="https://www.example.com/faq"
            maxLength={2048}
            value={url}
            onChange={(event) => setUrl(event.target.value)}
          />
          <button type="submit" disabled={busy === 'url' || !url.trim()}>
            {busy === 'url' ? 'Reading…' : 'Add page'}
          </button>
        </form>
      )}
    </section>
  );
}

/** A page the assistant keeps in sync: its title, address, last sync or why it is unreachable. */
function ContextPage({ page, onRemove }: { page: ContextUrl; onRemove: (() => void) | undefined }) {
  return (
    <li>
      <span className="name">
        {page.title ?? page.url}
        <span className="sub url">{page.url}</span>
      </span>
      <span className="sub">
        {page.status === 'failing' ? (
          <span className="badge handoff" title={page.last_error ?? undefined}>
            Unreachable
          </span>
        ) : (
          page.last_scraped_at && `Synced ${formatTime(page.last_scraped_at)}`
        )}
      </span>
      {onRemove && (
        <button className="link" aria-label={`Remove ${page.url}`} onClick={onRemove}>
          Remove
        </button>
      )}
    </li>
  );
}
