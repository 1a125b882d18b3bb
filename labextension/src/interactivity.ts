/**
 * What a rendered turn does beyond its HTML: the markup itself comes from Python
 * (mlx_notebook/display: `mlxnb-` classes), so the live widget and the MIME renderer only
 * wire behaviour onto it, with these functions.
 *
 * - Reasoning is a `<details class="mlxnb-reasoning">`: it expands natively; `wireReasoning`
 *   keeps its open state across re-renders of the same turn (the live widget patches the DOM).
 * - Tokens are `<span class="mlxnb-token" title="...">` with a `.mlxnb-token-tip` table
 *   inside: CSS shows the tip on hover; `wireTokens` also shows it on keyboard focus and
 *   writes the token's probability into `aria-label`, and works where a sanitizer removed
 *   the tip (an untrusted notebook) by falling back to the `title`.
 */

const TOKEN = '.mlxnb-token';
const ACTIVE = 'mlxnb-token-active';

/** Wire every interactive part of `node`; safe to call again after the HTML changes. */
export function wireTurn(node: HTMLElement, openReasoning?: Set<number>): void {
  wireReasoning(node, openReasoning);
  wireTokens(node);
}

/** Restore and record which reasoning panels (by position) the user opened. */
export function wireReasoning(node: HTMLElement, open?: Set<number>): void {
  node.querySelectorAll<HTMLDetailsElement>('details.mlxnb-reasoning').forEach((details, index) => {
    if (open?.has(index)) {
      details.open = true;
    }
    if (details.dataset.mlxnbWired) {
      return;
    }
    details.dataset.mlxnbWired = '1';
    details.addEventListener('toggle', () => {
      if (!open) {
        return;
      }
      if (details.open) {
        open.add(index);
      } else {
        open.delete(index);
      }
    });
  });
}

/** The token's probability as shown ("87.1%"): its tip's first row, else its title. */
export function tokenProbability(span: HTMLElement): string | null {
  const cells = span.querySelectorAll('.mlxnb-token-tip tr:first-child td');
  if (cells.length === 2) {
    return (cells[1].textContent ?? '').trim();
  }
  const match = /:\s*([0-9.]+%)/.exec((span.getAttribute('title') ?? '').split('\n')[0]);
  return match ? match[1] : null;
}

/** Make tokens focusable, labelled with their probability, and show the tip on focus. */
export function wireTokens(node: HTMLElement): void {
  node.querySelectorAll<HTMLElement>(TOKEN).forEach(span => {
    if (span.dataset.mlxnbWired) {
      return;
    }
    span.dataset.mlxnbWired = '1';
    span.tabIndex = 0;
    const probability = tokenProbability(span);
    if (probability) {
      span.setAttribute('aria-label', `${span.firstChild?.textContent ?? ''} ${probability}`);
    }
    const show = () => span.classList.add(ACTIVE);
    const hide = () => span.classList.remove(ACTIVE);
    span.addEventListener('mouseenter', show);
    span.addEventListener('mouseleave', hide);
    span.addEventListener('focus', show);
    span.addEventListener('blur', hide);
  });
}
