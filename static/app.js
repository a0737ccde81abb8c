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

// A nested child's <details data-keep-open> stays as its reader left it
// when a live frame morphs its card (the server's HTML never says open):
// a click on its summary records the reader's choice by the element's
// id, and a morph that changes it is undone.
const keepOpen = new Map()
document.addEventListener('click', (ev) => {
  const s = ev.target instanceof Element ? ev.target.closest('details[data-keep-open] > summary') : null
  if (!s || (ev.target instanceof Element && ev.target.closest('a'))) return
  const d = s.parentElement
  if (d.id) keepOpen.set(d.id, !d.open)
})
new MutationObserver((records) => {
  for (const r of records) {
    const nodes = r.type === 'attributes' ? [r.target] : Array.from(r.addedNodes)
    for (const n of nodes) {
      if (!(n instanceof Element)) continue
      const ds = n.matches('details[data-keep-open]') ? [n] : Array.from(n.querySelectorAll('details[data-keep-open]'))
      for (const d of ds) {
        const want = keepOpen.get(d.id)
        if (want !== undefined && d.open !== want) d.open = want
      }
    }
  }
}).observe(document.documentElement, { subtree: true, childList: true, attributes: true, attributeFilter: ['open'] })
