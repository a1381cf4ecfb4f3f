// A modal dialog on the native <dialog> element: showModal() makes the rest of the page
// inert and gives Esc; Tab and Shift+Tab also wrap inside the dialog so focus never drops
// to the browser's own controls, and focus returns to what opened the dialog on close (or,
// when that is gone, to where the page says the work goes on).
import type { ComponentChildren } from 'preact';
import { useId, useLayoutEffect, useRef } from 'preact/hooks';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** Where focus starts in the dialog's content: its [autofocus] element, else the first control. */
function initialFocus(dialog: HTMLDialogElement): HTMLElement | null {
  return dialog.querySelector<HTMLElement>('[autofocus]') ?? dialog.querySelector<HTMLElement>(FOCUSABLE);
}

export function Dialog(props: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
  /** Where focus goes on close if the opener can no longer take it (it left the page). */
  fallbackFocus?: () => HTMLElement | null;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const fallbackFocus = useRef(props.fallbackFocus);
  fallbackFocus.current = props.fallbackFocus;
  // A layout effect, not useEffect: Preact 11 runs an unmounted component's useEffect cleanup
  // after the next paint, when the <dialog> has already left the document. Removing the open
  // dialog drops focus to <body>, and it came back to the opener only a frame or more later
  // (longer on a busy machine). The layout cleanup runs during the unmount, while the
  // dialog is still in the document: close() and the opener's focus() happen before it goes.
  // On open, it also takes the opener while it surely still has focus, before any paint.
  useLayoutEffect(() => {
    const dialog = ref.current!;
    const opener = document.activeElement as HTMLElement | null;
    dialog.showModal();
    initialFocus(dialog)?.focus();
    return () => {
      if (dialog.open) dialog.close();
      opener?.focus();
      // The APG dialog pattern: focus returns to the opener unless it no longer exists (a
      // revoked key's row has no Revoke button any more); then it goes to an element that
      // continues the work logically, which only the page knows. Without one, <body>.
      if (document.activeElement !== opener) fallbackFocus.current?.()?.focus();
    };
  }, []);

  // After every render: when the content changed under the focused control (create's form
  // gave way to the raw key, removing the submit button), focus fell to <body> while the
  // modal is still open. Put it where it would start had the new content opened the dialog.
  useLayoutEffect(() => {
    const dialog = ref.current!;
    if (dialog.open && !dialog.contains(document.activeElement)) initialFocus(dialog)?.focus();
  });

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key !== 'Tab') return;
    const items = [...ref.current!.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.offsetParent !== null);
    if (items.length === 0) return;
    const first = items[0]!;
    const last = items[items.length - 1]!;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };

  return (
    <dialog
      ref={ref}
      class={props.wide ? 'dialog dialog-wide' : 'dialog'}
      aria-labelledby={titleId}
      onKeyDown={onKeyDown}
      onCancel={(event) => {
        // Esc: let the app close it, so its state and the element agree.
        event.preventDefault();
        props.onClose();
      }}
    >
      <h2 id={titleId} class="dialog-title">
        {props.title}
      </h2>
      {props.children}
    </dialog>
  );
}
