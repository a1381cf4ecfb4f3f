// An A2A agent's card on the Agents page (docs/a2a.md): the protocol version the gateway
// speaks to it, whether it streams, and its skills — or why there is nothing to show yet.
import type { A2aCard } from '../types.js';

export function A2aSkills(props: { card: A2aCard | null }) {
  const card = props.card;
  if (card === null) {
    return (
      <div class="muted" data-testid="a2a-card">
        A2A · card not read (the agent answers 503 until it is)
      </div>
    );
  }
  return (
    <div data-testid="a2a-card">
      <div class="muted">
        A2A {card.version}
        {card.streaming ? ' · streams' : ' · no streaming'}
        {card.name ? ` · ${card.name}` : ''}
      </div>
      {card.skills.length === 0 ? (
        <div class="muted">no skills declared</div>
      ) : (
        <ul class="a2a-skills" aria-label={`Skills of ${card.name || 'the agent'}`}>
          {card.skills.map((skill) => (
            <li key={skill.id}>
              <span class="skill-name">{skill.name || skill.id}</span>
              {skill.tags.length > 0 ? <span class="muted"> · {skill.tags.join(', ')}</span> : null}
              {/* Shown, not a hover title: a phone has no hover, and the description says what the skill does. */}
              {skill.description ? <div class="skill-description muted">{skill.description}</div> : null}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
