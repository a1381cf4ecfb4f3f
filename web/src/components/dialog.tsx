// A modal dialog on the native <dialog> element: showModal() makes the rest of the page
// inert and gives Esc; Tab and Shift+Tab also wrap inside the dialog so focus never drops
// to the browser's own controls, and focus returns to what opened the dialog on close.
import type { ComponentChildren } from 'preact';
import { useId, useLayoutEffect, useRef } from 'preact/hooks';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
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
    const first = dialog.querySelector<HTMLElement>('[autofocus]') ?? dialog.querySelector<HTMLElement>(FOCUSABLE);
    first?.focus();
    return () => {
      if (dialog.open) dialog.close();
      opener?.focus();
    };
  }, []);

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
