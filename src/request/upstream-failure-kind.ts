// Typed upstream failures (as undici's lib/core/errors.js distinguishes them): each kind maps
// to its own answer, audit outcome and metric label. Here, below both http/ and proxy/, so
// the request state can hold one without importing the proxy.
export type UpstreamFailureKind = 'connect' | 'headers_timeout' | 'idle_timeout' | 'reset' | 'max_duration' | 'bad_response';
