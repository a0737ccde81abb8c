// prism's only hand-written script: copy buttons. A button with
// data-copy="ID" copies the text of element ID (an input's value): its [data-copy-line]
// elements one a line, each prefixed with the attribute's value (table
// cards: read, diff, search), else its <pre class="lines"> blocks. Cut-line
// markers are left out; invisible-character markers stay, as shown.
const shown = (el) => Array.from(el.childNodes)
  .filter((n) => !(n instanceof Element && n.classList.contains('cut')))
  .map((n) => n.textContent).join('')
document.addEventListener('click', (ev) => {
  const btn = ev.target instanceof Element ? ev.target.closest('button[data-copy]') : null
  if (!btn) return
  const el = document.getElementById(btn.getAttribute('data-copy'))
  if (!el) return
  const rows = el.querySelectorAll('[data-copy-line]')
  const text = el instanceof HTMLInputElement ? el.value : rows.length > 0
    ? Array.from(rows).map((r) => r.getAttribute('data-copy-line') + shown(r)).join('\n')
    : Array.from(el.querySelectorAll('pre.lines')).map(shown).join('\n')
  const done = (label) => { btn.textContent = label; setTimeout(() => { btn.textContent = 'copy' }, 1200) }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => done('copied'), () => done('copy failed'))
  } else {
    const ta = document.createElement('textarea')
    ta.value = text
    document.body.append(ta)
    ta.select()
    try { document.execCommand('copy'); done('copied') } catch { done('copy failed') }
    ta.remove()
  }
})
