// The raw key, shown once after create or rotate, with a copy button. The gateway keeps only
// its hash, so this is the one chance to copy it; the text says so plainly.
import { useId, useRef, useState } from 'preact/hooks';

async function copyText(text: string, fallback: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No clipboard permission (an insecure origin): select it for Ctrl+C.
    fallback?.select();
    return false;
  }
}

export function RawKey(props: { rawKey: string; keyId: string; onDone: () => void }) {
  const [copied, setCopied] = useState<boolean | undefined>(undefined);
  const input = useRef<HTMLInputElement>(null);
  const warningId = useId();
  return (
    <div class="raw-key">
      <p id={warningId} class="warning" role="note">
        <strong>Copy this key now. You will not see it again.</strong> The gateway stores only its hash; if it is lost, rotate the key.
      </p>
      <label class="field">
        <span>API key ({props.keyId})</span>
        <div class="copy-row">
          <input ref={input} class="mono" type="text" readOnly value={props.rawKey} data-testid="raw-key" onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
          {/* Focus starts on Copy (the dialog's [autofocus]): following the APG dialog pattern,
              on the least destructive action, and the one this view exists for: "I have
              copied it" ends the only chance to see the key. It is described by the warning,
              so a screen reader says it along with the button. */}
          <button type="button" class="button" autoFocus aria-describedby={warningId} onClick={async () => setCopied(await copyText(props.rawKey, input.current))}>
            Copy
          </button>
        </div>
      </label>
      <p class="copy-status" role="status">
        {copied === true ? 'Copied to the clipboard.' : copied === false ? 'Selected: press Ctrl+C (⌘C) to copy.' : ''}
      </p>
      <div class="dialog-actions">
        <button type="button" class="button button-primary" onClick={props.onDone}>
          I have copied it
        </button>
      </div>
    </div>
  );
}
