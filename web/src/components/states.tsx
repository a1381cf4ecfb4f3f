// The loading, error and empty states every page uses, so they look and read the same.
import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api.js';

export function Loading(props: { what: string }) {
  return (
    <p class="state state-loading" role="status">
      <span class="spinner" aria-hidden="true" /> Loading {props.what}…
    </p>
  );
}

export function ErrorState(props: { error: Error; retry?: () => void }) {
  const type = (props.error as Partial<ApiError>).type;
  return (
    <div class="state state-error" role="alert">
      <p>
        <strong>Something went wrong.</strong> {props.error.message}
        {type !== undefined && type !== 'error' ? <code class="error-type">{type}</code> : null}
      </p>
      {props.retry ? (
        <button type="button" class="button" onClick={props.retry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

export function Empty(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="state state-empty">
      <p class="state-title">{props.title}</p>
      {props.children}
    </div>
  );
}

/** A request's error shown inside a form, naming the field when the gateway did. */
export function FormError(props: { error: Error | undefined }) {
  if (props.error === undefined) return null;
  const param = (props.error as Partial<ApiError>).param;
  return (
    <p class="form-error" role="alert">
      {param ? <strong>{param}: </strong> : null}
      {props.error.message}
    </p>
  );
}
