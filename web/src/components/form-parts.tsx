// Pieces every key dialog repeats: a labelled choice from a fixed list, and the Cancel /
// submit pair at the bottom (the submit button says what it is doing while busy).

export interface Choice {
  value: string;
  label: string;
}

export function ChoiceField(props: { label: string; name: string; choices: readonly Choice[]; value: string; onChange: (value: string) => void }) {
  return (
    <label class="field">
      <span>{props.label}</span>
      <select name={props.name} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.choices.map((c) => (
          <option key={c.value} value={c.value}>
            {c.label}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * Busy, the submit button is aria-disabled, not disabled: it keeps focus (Chromium moves focus
 * off a disabled button to <body>, in the middle of an open dialog), and the form's submit
 * handler ignores it while busy.
 */
export function DialogActions(props: { onCancel: () => void; busy: boolean; disabled?: boolean; label: string; busyLabel: string }) {
  return (
    <div class="dialog-actions">
      <button type="button" class="button" onClick={props.onCancel}>
        Cancel
      </button>
      <button type="submit" class="button button-primary" disabled={props.disabled === true} aria-disabled={props.busy}>
        {props.busy ? props.busyLabel : props.label}
      </button>
    </div>
  );
}

/** The "Agent" filter of the Keys and Usage pages: any, or one of the configured agents. */
export function AgentFilter(props: { agents: readonly { id: string }[] | undefined; value: string; onChange: (agent: string) => void }) {
  return (
    <label class="field field-inline">
      <span>Agent</span>
      <select name="agent" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {props.agents?.map((a) => (
          <option key={a.id} value={a.id}>
            {a.id}
          </option>
        ))}
      </select>
    </label>
  );
}
