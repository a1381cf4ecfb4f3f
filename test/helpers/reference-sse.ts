// A deliberately naive Server-Sent Events parser written from the WHATWG HTML spec
// ("Interpreting an event stream"), used as the client's view in property tests: it decodes
// the whole byte stream at once, so it shares no chunking logic with the gateway's parser.

export interface ReferenceEvent {
  name: string;
  data: string;
}

export interface ReferenceParse {
  events: ReferenceEvent[];
  /** `tokens_used` of the last `done` event, as the gateway reads it; null when absent. */
  tokensUsed: number | null;
}

/**
 * `dispatch: 'spec'` follows the spec (an event with no data line is dropped); `'any-field'`
 * dispatches on any `event`/`data`/`id`/`retry` field, which is what the gateway counts.
 */
export function parseSseReference(bytes: Uint8Array, dispatch: 'spec' | 'any-field' = 'spec'): ReferenceParse {
  const text = new TextDecoder('utf-8').decode(bytes);
  const events: ReferenceEvent[] = [];
  let tokensUsed: number | null = null;
  let eventType = '';
  let data: string[] = [];
  let sawField = false;
  // Split on CRLF, LF or CR; the text after the last terminator is an unterminated line, discarded.
  const lines = text.split(/\r\n|\n|\r/);
  lines.pop();
  for (const line of lines) {
    if (line === '') {
      const dispatchNow = dispatch === 'spec' ? data.length > 0 : sawField;
      if (dispatchNow) {
        const event = { name: eventType === '' ? 'message' : eventType, data: data.join('\n') };
        events.push(event);
        if (event.name === 'done') tokensUsed = tokensFrom(event.data);
      }
      eventType = '';
      data = [];
      sawField = false;
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') {
      eventType = value;
      sawField = true;
    } else if (field === 'data') {
      data.push(value);
      sawField = true;
    } else if (field === 'id' || field === 'retry') {
      sawField = true;
    }
  }
  return { events, tokensUsed };
}

function tokensFrom(data: string): number | null {
  try {
    const tokens = (JSON.parse(data) as { tokens_used?: unknown } | null)?.tokens_used;
    return typeof tokens === 'number' && Number.isInteger(tokens) && tokens >= 0 ? tokens : null;
  } catch {
    return null;
  }
}
