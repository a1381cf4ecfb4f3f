// Tables wider than their frame say so (docs/dashboard.md, "Narrow screens"): every
// `.table-wrap` whose table is wider than it gets `data-overflowing="true"`, and the stylesheet
// then shows a line "Scroll sideways for more columns" that stays in view and a shade at the
// edge, while the actions column stays pinned at the right. Kept up to date as pages render
// (child changes) and as the window is resized.

function mark(root: ParentNode): void {
  for (const wrap of root.querySelectorAll<HTMLElement>('.table-wrap')) {
    const overflowing = String(wrap.scrollWidth > wrap.clientWidth + 1);
    // Only on change: the attribute is not watched, but a write still costs a style pass.
    if (wrap.dataset.overflowing !== overflowing) wrap.dataset.overflowing = overflowing;
  }
}

/** Starts marking the tables under `root`; returns the function that stops it. */
export function markOverflowingTables(root: HTMLElement): () => void {
  let scheduled = false;
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      mark(root);
    });
  };
  const mutations = new MutationObserver(schedule);
  mutations.observe(root, { childList: true, subtree: true, characterData: true });
  const sizes = new ResizeObserver(schedule);
  sizes.observe(root);
  window.addEventListener('resize', schedule);
  schedule();
  return () => {
    mutations.disconnect();
    sizes.disconnect();
    window.removeEventListener('resize', schedule);
  };
}
