// prism's only hand-written script: copy buttons. A button with
// data-copy="ID" copies the text of the <pre> blocks inside element ID.
document.addEventListener('click', (ev) => {
  const btn = ev.target instanceof Element ? ev.target.closest('button[data-copy]') : null
  if (!btn) return
  const el = document.getElementById(btn.getAttribute('data-copy'))
  if (!el) return
  const text = Array.from(el.querySelectorAll('pre.lines'))
    .map((p) => Array.from(p.childNodes).filter((n) => !(n instanceof Element && n.classList.contains('cut'))).map((n) => n.textContent).join(''))
    .join('\n')
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
