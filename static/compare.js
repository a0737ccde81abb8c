// prism's compare page (views.ComparePage): n and p — and the two buttons —
// move to the next and previous differing row, focus it and scroll it under
// the sticky bar. The rows may be re-rendered by the live stream: the row
// last moved to is found again by its id, else the move starts from where
// the page is scrolled.
const nav = document.querySelector('[data-testid="compare-nav"]')
if (nav) init(nav)

function init (nav) {
  const pos = nav.querySelector('.cmp-pos')
  let current = '' // the id of the row last moved to

  const rows = () => [...document.querySelectorAll('#compare .cmp-row.differs')]

  function start (list, dir) {
    const i = list.findIndex((r) => r.id === current)
    if (i >= 0) return i
    // From where the page stands: the rows above the bar's bottom are behind.
    const line = nav.getBoundingClientRect().bottom + 1
    if (dir > 0) {
      const j = list.findIndex((r) => r.getBoundingClientRect().top >= line)
      return j < 0 ? list.length - 1 : j - 1
    }
    let j = list.length
    while (j > 0 && list[j - 1].getBoundingClientRect().top >= line) j--
    return j
  }

  function move (dir) {
    const list = rows()
    if (list.length === 0) {
      pos.textContent = 'no differences'
      return
    }
    const i = Math.min(Math.max(start(list, dir) + dir, 0), list.length - 1)
    const row = list[i]
    for (const r of document.querySelectorAll('#compare .cmp-row[aria-current]')) r.removeAttribute('aria-current')
    row.setAttribute('aria-current', 'true')
    current = row.id
    row.focus({ preventScroll: true })
    row.scrollIntoView({ block: 'start' })
    pos.textContent = `${i + 1} of ${list.length}`
  }

  nav.addEventListener('click', (e) => {
    const b = e.target.closest('[data-cmp]')
    if (b) move(b.dataset.cmp === 'next' ? 1 : -1)
  })
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return
    const t = e.target
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return
    if (e.key === 'n' || e.key === 'p') {
      e.preventDefault()
      move(e.key === 'n' ? 1 : -1)
    }
  })
}
