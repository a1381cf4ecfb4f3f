// Sign-in with an admin token. The token goes to POST /dashboard/session once; the browser
// then holds only an HttpOnly session cookie, never the token. When admin.oidc is configured,
// also a link to sign in through the identity provider (docs/identity.md "Dashboard sign-in").
import { useEffect, useState } from 'preact/hooks';
import { identityProviderSignIn, signIn } from '../api.js';
import { FormError } from '../components/states.js';
import type { Session } from '../types.js';

export function SignIn(props: { onSignedIn: (session: Session) => void }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [providerLogin, setProviderLogin] = useState<string | undefined>(undefined);
  useEffect(() => {
    void identityProviderSignIn().then(setProviderLogin);
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      props.onSignedIn(await signIn(token.trim()));
    } catch (failure) {
      setError(failure as Error);
      setBusy(false);
    }
  };

  return (
    <main class="centered">
      <form class="card sign-in" onSubmit={submit}>
        <h1>agent-gateway</h1>
        {providerLogin !== undefined && (
          <p>
            <a class="button button-primary" href={providerLogin}>
              Sign in with your identity provider
            </a>
          </p>
        )}
        <p class="muted">Sign in with an admin token (config <code>admin.tokens</code>; <code>npm start</code> prints a demo one).</p>
        <label class="field">
          <span>Admin token</span>
          <input type="password" name="token" autoComplete="off" spellcheck={false} required autoFocus value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </label>
        <FormError error={error} />
        <button type="submit" class="button button-primary" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
