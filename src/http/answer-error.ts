// A chat request's error answer, whichever stage failed (chat-pipeline.ts): the registry's
// error, or internal_error (logged) for anything else; nothing when the client is gone.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { RequestState } from '../request/request-state.js';
import { sendError } from './errors.js';
import { closesConnection, resetStreamAfterAnswer } from './http2-requests.js';
import { ClientGoneError } from './read-body.js';

export function answerError(error: unknown, req: IncomingMessage, res: ServerResponse, state: RequestState, logger: Logger): void {
  // Nothing to answer; with no answer sent, the outcome is client_closed.
  if (error instanceof ClientGoneError) return;
  let gatewayError: GatewayError;
  if (error instanceof GatewayError) {
    gatewayError = error;
  } else {
    logger.error({ request_id: state.requestId, err: error }, 'unhandled error in request pipeline');
    gatewayError = new GatewayError('internal_error');
    state.endedInError = true;
  }
  state.errorType = gatewayError.type;
  state.errorStatus = gatewayError.status;
  if (!res.headersSent) state.applyGatewayHeaders(res);
  // A body we refused to read must not be read to its end to keep the connection.
  if (gatewayError.type === 'payload_too_large' || !req.complete) {
    if (!closesConnection(req)) resetStreamAfterAnswer(req);
    else res.shouldKeepAlive = false;
  }
  if (gatewayError.type === 'payload_too_large' && closesConnection(req)) res.setHeader('Connection', 'close');
  sendError(res, gatewayError, state.requestId, state);
}
