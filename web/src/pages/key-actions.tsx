// Revoke and rotate, each behind a confirmation that says what will happen.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Dialog } from '../components/dialog.js';
import { ChoiceField, DialogActions } from '../components/form-parts.js';
import { RawKey } from '../components/raw-key.js';
import { FormError } from '../components/states.js';
import type { Key, KeyWithSecret } from '../types.js';

function label(key: Key): string {
  return key.name ? `“${key.name}”` : key.key_id;
}

/**
 * What the page gives a key's dialogs: the table's reload (it settles once the table shows
 * the change), and where focus goes if the button that opened the dialog has left the page.
 */
export interface KeyDialogProps {
  keyRecord: Key;
  onClose: () => void;
  onDone: () => Promise<void>;
  fallbackFocus: () => HTMLElement | null;
}

export function RevokeDialog(props: KeyDialogProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const revoke = async () => {
    if (busy) return;
    setBusy(true);
    try {
      await api.post<Key>(`/admin/v1/keys/${encodeURIComponent(props.keyRecord.key_id)}/revoke`);
      // Closed once the table shows the key revoked: its Revoke button is gone by then, so
      // the dialog knows to give focus to the fallback (the row) rather than to <body> later.
      await props.onDone();
      props.onClose();
    } catch (failure) {
      setError(failure as Error);
      setBusy(false);
    }
  };
  return (
    <Dialog title={`Revoke ${label(props.keyRecord)}?`} onClose={props.onClose} fallbackFocus={props.fallbackFocus}>
      <p>
        Calls with <code>{props.keyRecord.key_id}</code> (account <strong>{props.keyRecord.account}</strong>) will be refused by every gateway within a second. This cannot be undone.
      </p>
      <FormError error={error} />
      <div class="dialog-actions">
        <button type="button" class="button" autoFocus onClick={props.onClose}>
          Cancel
        </button>
        {/* aria-disabled while busy, so it keeps focus (as DialogActions' submit button). */}
        <button type="button" class="button button-danger" aria-disabled={busy} onClick={revoke}>
          {busy ? 'Revoking…' : 'Revoke key'}
        </button>
      </div>
    </Dialog>
  );
}

const GRACE_CHOICES = [
  { value: '0s', label: 'End it now' },
  { value: '1h', label: '1 hour' },
  { value: '24h', label: '24 hours' },
  { value: '7d', label: '7 days' },
];

export function RotateDialog(props: KeyDialogProps) {
  const [grace, setGrace] = useState('24h');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [rotated, setRotated] = useState<KeyWithSecret | undefined>(undefined);
  const rotate = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    try {
      const key = await api.post<KeyWithSecret>(`/admin/v1/keys/${encodeURIComponent(props.keyRecord.key_id)}/rotate`, { grace });
      // The table first (as for revoke): the old key may leave a filtered list ("active").
      await props.onDone();
      setRotated(key);
    } catch (failure) {
      setError(failure as Error);
      setBusy(false);
    }
  };
  if (rotated) {
    return (
      <Dialog title="Key rotated" onClose={props.onClose} fallbackFocus={props.fallbackFocus}>
        <RawKey rawKey={rotated.key} keyId={rotated.key_id} onDone={props.onClose} />
      </Dialog>
    );
  }
  return (
    <Dialog title={`Rotate ${label(props.keyRecord)}?`} onClose={props.onClose} fallbackFocus={props.fallbackFocus}>
      <form class="form" onSubmit={rotate}>
        <p>A new key with the same account, plan and agents replaces it. Give the old key time to be swapped out where it is used:</p>
        <ChoiceField label="Old key keeps working for" name="grace" choices={GRACE_CHOICES} value={grace} onChange={setGrace} />
        <FormError error={error} />
        <DialogActions onCancel={props.onClose} busy={busy} label="Rotate key" busyLabel="Rotating…" />
      </form>
    </Dialog>
  );
}
