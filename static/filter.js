// prism's filter bar on the session page (views.FilterBar): hides the cards,
// and the messages, that do not match the filters, without a reload; counts
// the cards per state, tool and error code; steps between failed cards;
// expands and collapses every card at once. It works on the cards the page
// holds (live cards included: they are filtered as they arrive); entries not
// loaded yet are counted only once loaded, and the bar says so.
const bar = document.getElementById('filter-bar')
const transcript = document.getElementById('transcript')
if (bar && transcript) init(bar, transcript)

function init (bar, transcript) {
  const text = bar.querySelector('[name="filter-text"]')
  const states = [...bar.querySelectorAll('[name="filter-state"]')]
  const chips = { tool: bar.querySelector('[data-chips="tool"]'), code: bar.querySelector('[data-chips="code"]') }
  const summary = bar.querySelector('.fb-summary')
  const clearBtn = bar.querySelector('[data-filter-action="clear"]')
  const picked = { tool: '', code: '' }
  let cursor = null // the card the error buttons last moved to
  let note = '' // where the error buttons stand, shown until the filters change

  const cardsOf = () => [...transcript.querySelectorAll('[data-testid="tool-card"]')].filter((c) => !c.closest('.child-body')) // a nested subagent's cards are its own
  const itemsOf = () => [...transcript.querySelectorAll('.items > [id], .transcript > [id]:not(.earlier):not(.step):not(.turn), .earlier > [id]:not(.earlier):not(.step):not(.turn)')]
  const failed = (c) => c.dataset.filterState === 'error' || c.dataset.filterState === 'interrupted'

  function active () {
    return text.value.trim() !== '' || picked.tool !== '' || picked.code !== '' || states.some((s) => s.checked)
  }

  function matches (card, needle, wanted) {
    if (wanted.size > 0 && !wanted.has(card.dataset.filterState)) return false
    if (picked.tool !== '' && card.dataset.tool !== picked.tool) return false
    if (picked.code !== '' && card.dataset.errorCode !== picked.code) return false
    return needle === '' || card.textContent.toLowerCase().includes(needle)
  }

  function apply () {
    const needle = text.value.trim().toLowerCase()
    const wanted = new Set(states.filter((s) => s.checked).map((s) => s.value))
    const cardFilter = wanted.size > 0 || picked.tool !== '' || picked.code !== ''
    const on = active()
    let shown = 0
    const cards = cardsOf()
    for (const item of itemsOf()) {
      let keep
      if (item.dataset.testid === 'tool-card') {
        keep = !on || matches(item, needle, wanted)
        if (keep) shown++
      } else {
        // Messages and rows: kept while only text filters, when they hold it.
        keep = !on || (!cardFilter && needle !== '' && item.textContent.toLowerCase().includes(needle))
      }
      item.classList.toggle('f-out', !keep)
    }
    // A step whose items are all filtered out goes too.
    for (const step of transcript.querySelectorAll('.step')) {
      const items = step.querySelectorAll('.items > [id]')
      step.classList.toggle('f-out', on && items.length > 0 && [...items].every((i) => i.classList.contains('f-out')))
    }
    transcript.classList.toggle('filtering', on)
    clearBtn.hidden = !on
    const more = transcript.querySelector('.load-earlier')
    let line = on ? `showing ${shown} of ${plural(cards.length, 'card')}` : plural(cards.length, 'card')
    if (more) line += ` · ${more.textContent.trim().replace(/^show /, '')} not loaded`
    if (note) line += ` · ${note}`
    summary.textContent = line
  }

  function recount () {
    const cards = cardsOf()
    const byState = {}
    const byTool = new Map()
    const byCode = new Map()
    for (const c of cards) {
      byState[c.dataset.filterState] = (byState[c.dataset.filterState] || 0) + 1
      const tool = c.dataset.tool || '(none)'
      byTool.set(tool, (byTool.get(tool) || 0) + 1)
      if (c.dataset.errorCode) byCode.set(c.dataset.errorCode, (byCode.get(c.dataset.errorCode) || 0) + 1)
    }
    for (const n of bar.querySelectorAll('[data-count-state]')) n.textContent = String(byState[n.dataset.countState] || 0)
    fillChips(chips.tool, 'tool', byTool)
    fillChips(chips.code, 'code', byCode)
    apply()
  }

  function fillChips (box, kind, counts) {
    const sorted = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    const key = JSON.stringify(sorted) + picked[kind]
    if (box.dataset.key === key) return
    box.dataset.key = key
    box.replaceChildren(...sorted.map(([name, n]) => {
      const b = document.createElement('button')
      b.type = 'button'
      b.className = 'chip'
      b.dataset.value = name
      b.setAttribute('aria-pressed', String(picked[kind] === name))
      b.append(name, ' ')
      const count = document.createElement('span')
      count.className = 'fb-n'
      count.textContent = String(n)
      b.append(count)
      b.addEventListener('click', () => {
        note = ''
        picked[kind] = picked[kind] === name ? '' : name
        box.dataset.key = ''
        recount()
      })
      return b
    }))
    if (sorted.length === 0) box.textContent = 'none'
  }

  function step (dir) {
    const targets = cardsOf().filter((c) => failed(c) && !c.classList.contains('f-out'))
    if (targets.length === 0) {
      note = 'no failed or interrupted card shown'
      apply()
      return
    }
    let i = cursor ? targets.indexOf(cursor) : -1
    if (i < 0) {
      // From where the reader is: the first below (or above) the top of the view.
      const top = bar.getBoundingClientRect().bottom + 4
      i = dir > 0 ? targets.findIndex((c) => c.getBoundingClientRect().top > top) : findLastIndex(targets, (c) => c.getBoundingClientRect().top < top)
      if (i < 0) i = dir > 0 ? 0 : targets.length - 1
    } else {
      i = (i + dir + targets.length) % targets.length
    }
    cursor = targets[i]
    cursor.setAttribute('tabindex', '-1')
    cursor.scrollIntoView({ block: 'center' })
    cursor.focus({ preventScroll: true })
    cursor.classList.remove('flash')
    void cursor.offsetWidth // restart the animation
    cursor.classList.add('flash')
    note = `${cursor.dataset.errorCode || cursor.dataset.filterState}: ${i + 1} of ${targets.length} failed or interrupted`
    apply()
  }

  function expand (open) {
    // A card's model view is a switch of what its body shows, not a fold:
    // expanding everything keeps the bodies in sight.
    for (const d of transcript.querySelectorAll('details:not(.model-view)')) d.open = open
    for (const x of transcript.querySelectorAll('input.expand-toggle')) x.checked = open
  }

  bar.addEventListener('click', (ev) => {
    const b = ev.target instanceof Element ? ev.target.closest('[data-filter-action]') : null
    if (!b) return
    switch (b.dataset.filterAction) {
      case 'next-error': step(1); break
      case 'prev-error': step(-1); break
      case 'expand': expand(true); break
      case 'collapse': expand(false); break
      case 'clear':
        note = ''
        text.value = ''
        for (const s of states) s.checked = false
        picked.tool = picked.code = ''
        for (const box of Object.values(chips)) box.dataset.key = ''
        recount()
        break
    }
  })
  const changed = () => { note = ''; cursor = null; apply() }
  text.addEventListener('input', changed)
  for (const s of states) s.addEventListener('change', changed)

  // Cards arrive and change live (and Datastar's morphs reset classes):
  // count and filter again once per frame.
  let queued = false
  new MutationObserver(() => {
    if (queued) return
    queued = true
    requestAnimationFrame(() => { queued = false; recount() })
  }).observe(transcript, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-filter-state', 'class'] })
  recount()
}

function plural (n, word) { return `${n} ${word}${n === 1 ? '' : 's'}` }

function findLastIndex (xs, f) {
  for (let i = xs.length - 1; i >= 0; i--) if (f(xs[i])) return i
  return -1
}
