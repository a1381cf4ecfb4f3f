// The two chat routes a request can take (docs/design.md, "Wire contract"); known to routing,
// the request state, the relays and the audit record alike.
export type ChatRoute = 'chat' | 'chat/stream';
