/**
 * `%%chat` and `%%complete` cells are Markdown, not Python, to the editor.
 *
 * The cell's language stays the kernel's (ipython); when a cell's first line is one of our
 * cell magics, a higher-precedence compartment supplies JupyterLab's own Markdown language
 * (CodeMirror 6 uses the first `language` facet value), so an apostrophe in a prompt no
 * longer opens a Python string that colours the rest. The magic line is marked as a magic.
 */

import { LanguageSupport } from '@codemirror/language';
import { Compartment, EditorState, Extension, Prec } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, ViewPlugin, ViewUpdate } from '@codemirror/view';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';

/** First lines that make a cell a prompt. */
export const PROMPT_MAGIC = /^%%(chat|complete)(\s|$)/;
const MAGIC_CLASS = 'cm-mlxnb-magic';

function isPrompt(state: EditorState): boolean {
  return PROMPT_MAGIC.test(state.doc.line(1).text);
}

function magicLine(state: EditorState): DecorationSet {
  if (!isPrompt(state)) {
    return Decoration.none;
  }
  const line = state.doc.line(1);
  return Decoration.set([Decoration.mark({ class: MAGIC_CLASS }).range(line.from, line.to)]);
}

/** The editor extension; `languages` gives JupyterLab's Markdown (loaded on first use). */
export function promptCellLanguage(languages: IEditorLanguageRegistry): Extension {
  const language = new Compartment();
  let markdown: LanguageSupport | null = null;
  const loaded = languages.getLanguage('markdown').then(async spec => {
    if (spec) {
      markdown = spec.support ?? (spec.load ? await spec.load() : null);
    }
    return markdown;
  });

  const languageFor = (state: EditorState): Extension => (isPrompt(state) && markdown ? markdown : []);

  // Switch language in the same transaction that adds or removes the magic line.
  const switcher = EditorState.transactionExtender.of(tr => {
    if (!tr.docChanged || isPrompt(tr.startState) === isPrompt(tr.state)) {
      return null;
    }
    return { effects: language.reconfigure(languageFor(tr.state)) };
  });

  const marker = ViewPlugin.fromClass(
    class {
      decorations: DecorationSet;
      private _live = true;

      constructor(view: EditorView) {
        this.decorations = magicLine(view.state);
        // An editor opened on a prompt cell before Markdown loaded switches once it has.
        void loaded.then(() => {
          if (this._live && isPrompt(view.state)) {
            view.dispatch({ effects: language.reconfigure(languageFor(view.state)) });
          }
        });
      }

      update(update: ViewUpdate): void {
        if (update.docChanged) {
          this.decorations = magicLine(update.state);
        }
      }

      destroy(): void {
        this._live = false;
      }
    },
    { decorations: plugin => plugin.decorations }
  );

  return [Prec.highest(language.of([])), switcher, marker];
}
