// prism's session-page navigation: the replay transport (seek, step, play,
// pause, live), jumps to a card or an event, the keyboard, and following a
// live session. Every control is also a plain link that works without this
// script; with it, a move is a request on the page's stream element
// (#stream), answered with Datastar patches, so a new move cancels a
// playback or the live stream the page had open.

// ---- transport ----

const transportEl = () => document.getElementById('transport')

// ttMode is where the page stands: live, at (an event) or play.
function ttMode () {
  const t = transportEl()
  return t ? t.getAttribute('data-mode') || 'live' : 'live'
}

// ttHeld is the seq the page holds (-1 on the live page).
function ttHeld () {
  const t = transportEl()
  const n = t ? parseInt(t.getAttribute('data-at'), 10) : -1
  return Number.isFinite(n) ? n : -1
}

// ttRequest makes a request on the page's stream element: Datastar cancels
// the element's request before (requestCancellation 'cleanup').
function ttRequest (url) {
  const s = document.getElementById('stream')
  if (!s || !url) return
  const safe = url.replace(/[\\']/g, (c) => encodeURIComponent(c))
  s.setAttribute('data-init', `@get('${safe}', {requestCancellation: 'cleanup'})`)
}

function ttSeek (query) {
  const t = transportEl()
  if (t) ttRequest(t.getAttribute('data-seek') + query)
}

function ttStep (kind, dir) {
  ttSeek('?step=' + kind + (dir > 0 ? '%2B' : '-'))
}

function ttSpeed () {
  const r = document.querySelector('input[name="tt-speed"]:checked')
  return r ? r.value : '10'
}

function ttPlay () {
  const t = transportEl()
  if (!t) return
  const held = ttHeld()
  // From the live page a replay starts over: the page is first brought
  // to the start, then played.
  const from = held < 0 ? 0 : held
  const render = held < 0 ? '&render=1' : ''
  ttRequest(t.getAttribute('data-stream') + '?after=' + from + '&speed=' + ttSpeed() + render)
}

function ttPause () { ttSeek('') }

function ttLive () {
  const t = transportEl()
  const held = ttHeld()
  if (!t || ttMode() === 'live') return
  if (!t.hasAttribute('data-follow')) {
    // A page that cannot follow the session (a link scoped up to an
    // event, a server without a live feed): its latest page.
    const live = t.querySelector('[data-tt="live"]')
    if (live) location.assign(live.href)
    return
  }
  ttRequest(t.getAttribute('data-stream') + '?after=' + held)
}

function ttPlayPause () {
  if (ttMode() === 'play') ttPause()
  else ttPlay()
}

// ttAction runs a transport control's action (its data-tt).
function ttAction (action, el) {
  const m = /^(event|call|mark|error|turn)([+-])$/.exec(action)
  if (m) return ttStep(m[1], m[2] === '+' ? 1 : -1)
  switch (action) {
    case 'play': return ttPlayPause()
    case 'live': return ttLive()
    case 'help': return showKeys()
    case 'close': return el.closest('dialog')?.close()
    case 'start':
    case 'mark':
      return ttSeek(new URL(el.getAttribute('href'), location.href).search)
  }
}

document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return
  if (!(ev.target instanceof Element)) return
  const mark = ev.target.closest('#transport .mk a')
  if (mark) {
    ev.preventDefault()
    return ttAction('mark', mark)
  }
  const el = ev.target.closest('[data-tt]')
  if (!el) return
  if (el.getAttribute('aria-disabled') === 'true') {
    ev.preventDefault()
    return
  }
  // "back to live" on a page that holds no stream state is a plain link.
  if (el.getAttribute('data-tt') === 'live' && ttMode() === 'live') return
  ev.preventDefault()
  ttAction(el.getAttribute('data-tt'), el)
})

document.addEventListener('change', (ev) => {
  if (ev.target instanceof HTMLInputElement && ev.target.id === 'tt-range') {
    ttSeek('?at=' + ev.target.value)
  }
})

// ttMirrorURL keeps the address bar on the page's place, so a copied link
// opens the replay where it stands. replaceState is throttled: browsers
// limit how often it may be called.
let mirrorTimer = 0
function ttMirrorURL () {
  if (mirrorTimer) return
  mirrorTimer = setTimeout(() => {
    mirrorTimer = 0
    const u = new URL(location.href)
    for (const k of ['at', 'call', 'card', 'event']) u.searchParams.delete(k)
    const held = ttHeld()
    if (ttMode() !== 'live' && held >= 0) u.searchParams.set('at', String(held))
    u.hash = ''
    if (u.href !== location.href) history.replaceState(history.state, '', u.href)
  }, 250)
}

// ttFocus shows what a move landed on: the transport names the element
// (data-current).
function ttFocus () {
  const t = transportEl()
  const id = t && t.getAttribute('data-current')
  const el = id && document.getElementById(id)
  if (el) reveal(el, false)
}

function watchTransport () {
  const t = transportEl()
  if (!t) return
  let lastCurrent = t.getAttribute('data-current')
  let lastAt = t.getAttribute('data-at')
  let lastMode = t.getAttribute('data-mode')
  new MutationObserver(() => {
    const t = transportEl()
    if (!t) return
    const cur = t.getAttribute('data-current')
    const at = t.getAttribute('data-at')
    const mode = t.getAttribute('data-mode')
    if (at !== lastAt || mode !== lastMode) ttMirrorURL()
    if (at !== t.getAttribute('data-rendered-at')) {
      // The page moved without a new transport (a playback, a step
      // forward): which way holds anything is the server's to say now.
      for (const el of t.querySelectorAll('[data-tt][aria-disabled]')) el.removeAttribute('aria-disabled')
    }
    if (cur !== lastCurrent && mode === 'at') ttFocus()
    lastCurrent = cur
    lastAt = at
    lastMode = mode
  }).observe(t.parentElement, { subtree: true, attributes: true, attributeFilter: ['data-at', 'data-mode', 'data-current'] })
}

// growOf keeps the transport's end — its data-of, the scrubber's range,
// "of M" — at the session's last seq as the live stream brings events
// (the status pill's data-last-seq), so the scrubber reaches the latest
// event while the session runs. It only grows: a playback's status is
// behind the end.
function growOf () {
  const st = document.getElementById('session-status')
  const t = transportEl()
  if (!st || !t) return
  const n = parseInt(st.getAttribute('data-last-seq'), 10)
  const of = parseInt(t.getAttribute('data-of'), 10)
  if (!Number.isFinite(n) || (Number.isFinite(of) && n <= of)) return
  t.setAttribute('data-of', String(n))
  const range = document.getElementById('tt-range')
  if (range) range.max = String(n)
  const ttOf = t.querySelector('.tt-of')
  if (ttOf) ttOf.textContent = 'of ' + n
  const atOf = document.querySelector('#at-banner [data-testid="at-of"]')
  if (atOf) atOf.textContent = String(n)
}

function watchEnd () {
  const page = document.querySelector('.session-page')
  if (!page) return
  new MutationObserver(growOf).observe(page, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-last-seq'] })
}

// ---- jumps: the current element, fragments ----

// ---- sticky edges ----

// stickyEdges keeps the root's scroll padding (app.css) equal to what the
// page's sticky bars cover — the top bar and, where it sticks, the filter
// bar above; the transport below — so that a fragment, a search hit or a
// jump lands its target's head in view, not under a bar, in every layout.
function stickyEdges () {
  const root = document.documentElement
  const sticky = (el) => el && getComputedStyle(el).position === 'sticky'
  const measure = () => {
    let top = 0
    for (const el of document.querySelectorAll('.topbar, #filter-bar')) {
      if (sticky(el)) top = Math.max(top, (parseFloat(getComputedStyle(el).top) || 0) + el.getBoundingClientRect().height)
    }
    const tr = transportEl()
    root.style.setProperty('--sticky-top', Math.ceil(top) + 'px')
    root.style.setProperty('--sticky-bottom', (sticky(tr) ? Math.ceil(tr.getBoundingClientRect().height) : 0) + 'px')
  }
  measure()
  const ro = new ResizeObserver(measure)
  for (const el of document.querySelectorAll('.topbar, #filter-bar, #transport')) ro.observe(el)
  window.addEventListener('resize', measure)
}

// reveal scrolls el into view and gives it the keyboard focus: centred
// when it fits between the sticky bars, else its head at the top.
function reveal (el, current) {
  if (current) el.setAttribute('aria-current', 'true')
  if (!el.hasAttribute('tabindex') && !(el instanceof HTMLAnchorElement || el instanceof HTMLButtonElement)) el.tabIndex = -1
  const pad = getComputedStyle(document.documentElement)
  const room = window.innerHeight - (parseFloat(pad.scrollPaddingTop) || 0) - (parseFloat(pad.scrollPaddingBottom) || 0)
  el.scrollIntoView({ block: el.getBoundingClientRect().height > room ? 'start' : 'center' })
  el.focus({ preventScroll: true })
  el.classList.remove('flash')
  void el.offsetWidth
  el.classList.add('flash')
}

// fragmentPlace turns a card's or an event's #fragment into the page
// query that renders the window around it.
function fragmentPlace (id) {
  const ev = /^(?:ev|asst|turn|step)-(\d+)(?:-head)?$/.exec(id)
  if (ev) return { event: ev[1] }
  if (/^call-/.test(id)) return { card: id }
  return null
}

function jumpOnLoad () {
  const cur = document.querySelector('#transcript [aria-current="true"]')
  if (cur) return reveal(cur, true)
  const id = decodeURIComponent(location.hash.slice(1))
  if (id) {
    const el = document.getElementById(id)
    if (el) return reveal(el, true)
    const p = fragmentPlace(id)
    if (p && document.getElementById('transcript')) {
      // The element is outside the window: ask for the window around it.
      const u = new URL(location.href)
      for (const [k, v] of Object.entries(p)) u.searchParams.set(k, v)
      location.replace(u.href)
      return
    }
  }
  if (ttMode() === 'at') ttFocus()
}

window.addEventListener('hashchange', () => {
  const id = decodeURIComponent(location.hash.slice(1))
  const el = id && document.getElementById(id)
  if (el) {
    for (const c of document.querySelectorAll('#transcript [aria-current="true"]')) c.removeAttribute('aria-current')
    reveal(el, true)
  } else if (id) {
    jumpOnLoad()
  }
})

// ---- keyboard ----

// cards are the transcript's cards the reader sees: the filter bar
// (static/filter.js) hides the others with .f-out, and j, k and e skip them.
function cards () {
  return Array.from(document.querySelectorAll('#transcript .card')).filter((c) => !c.closest('.f-out'))
}

// currentCard is the card the keyboard stands on: the focused one, else
// the first one in view.
function currentCard () {
  const a = document.activeElement
  const c = a instanceof Element ? a.closest('#transcript .card') : null
  if (c) return c
  const top = document.querySelector('.topbar')
  const min = top ? top.getBoundingClientRect().bottom : 0
  return cards().find((el) => el.getBoundingClientRect().bottom > min) || null
}

function moveCard (dir, match) {
  const all = cards()
  const cur = currentCard()
  let i = cur ? all.indexOf(cur) : -1
  const focused = cur && document.activeElement instanceof Element && document.activeElement.closest('.card') === cur
  if (!focused && dir > 0 && cur && (!match || match(cur))) i -= 1
  for (i += dir; i >= 0 && i < all.length; i += dir) {
    if (!match || match(all[i])) {
      reveal(all[i], false)
      return true
    }
  }
  return false
}

const isError = (el) => el.getAttribute('data-state') === 'error'

function nextError () {
  if (moveCard(1, isError)) return
  if (ttMode() !== 'live') return ttStep('error', 1)
  // Live: the next error mark after the current card, on its own page.
  const cardOf = (m) => new URL(m.getAttribute('href'), location.href).searchParams.get('card')
  const marks = Array.from(document.querySelectorAll('#transport .mk-error a'))
  const cur = currentCard()
  const after = cur ? marks.findIndex((m) => cardOf(m) === cur.id) : -1
  const next = marks[after + 1]
  if (next) location.assign('?card=' + encodeURIComponent(cardOf(next)))
}

function showKeys () {
  const d = document.getElementById('keys')
  if (d && !d.open) d.showModal()
}

function typing (el) {
  if (!(el instanceof Element)) return false
  if (el.isContentEditable) return true
  if (el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) return true
  return el instanceof HTMLInputElement && !['range', 'radio', 'checkbox', 'button', 'submit'].includes(el.type)
}

document.addEventListener('keydown', (ev) => {
  if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return
  if (document.querySelector('dialog[open]')) return
  if (!document.getElementById('transcript')) return
  const replay = !!transportEl()
  switch (ev.key) {
    case 'j': moveCard(1); break
    case 'k': moveCard(-1); break
    case 'e': nextError(); break
    case '?': showKeys(); break
    case '[': if (replay) ttStep('mark', -1); break
    case ']': if (replay && ttMode() !== 'live') ttStep('mark', 1); break
    case 'l': if (replay) ttLive(); break
    case ' ':
      if (!replay || ttMode() === 'live') return
      if (ev.target instanceof HTMLButtonElement || ev.target instanceof HTMLAnchorElement || (ev.target instanceof Element && ev.target.tagName === 'SUMMARY')) return
      ttPlayPause()
      break
    default: return
  }
  ev.preventDefault()
})

// ---- follow live ----

// A reader at the bottom of a live (or playing) session sees new entries
// scroll into view; one who scrolled up gets a "N new below" pill instead.
function followLive () {
  const tr = document.getElementById('transcript')
  const pill = document.getElementById('new-below')
  if (!tr || !pill) return
  const height = () => document.documentElement.scrollHeight
  // At the bottom of a page of height h (the transport bar's height of
  // slack): measured against the height before new entries came, so it
  // does not depend on when scroll events fire.
  const nearBottom = (h) => window.scrollY + window.innerHeight >= h - 120
  let lastHeight = height()
  let unseen = 0
  // The transport's data-rendered-at changes when a move re-renders the
  // page (a rewind, going live): what it brought is no news, and the count
  // from before is stale.
  const renderedAt = () => transportEl()?.getAttribute('data-rendered-at') ?? ''
  let lastRendered = renderedAt()
  const show = () => {
    pill.hidden = unseen === 0
    pill.textContent = unseen === 1 ? '1 new below' : unseen + ' new below'
  }
  window.addEventListener('scroll', () => {
    lastHeight = height()
    if (unseen && nearBottom(lastHeight)) {
      unseen = 0
      show()
    }
  }, { passive: true })
  pill.addEventListener('click', () => {
    unseen = 0
    show()
    window.scrollTo({ top: height() })
  })
  new MutationObserver((ms) => {
    const was = nearBottom(lastHeight)
    const mode = ttMode()
    const rendered = renderedAt()
    if (rendered !== lastRendered || (mode !== 'live' && mode !== 'play')) {
      lastRendered = rendered
      unseen = 0
      show()
      lastHeight = height()
      return
    }
    let added = 0
    if (mode === 'live' || mode === 'play') {
      for (const m of ms) {
        for (const n of m.addedNodes) {
          if (!(n instanceof Element) || n.closest('.earlier, .later')) continue
          if (n.matches('.card, .msg')) added++
          else added += n.querySelectorAll('.card, .msg').length
        }
      }
    }
    // A reader at the bottom stays there whatever grew the page (a step
    // opening before its cards come in a later batch); one who scrolled
    // up counts the new cards and messages.
    if (was && (mode === 'live' || mode === 'play') && (added || height() > lastHeight)) {
      window.scrollTo({ top: height() })
    } else if (added) {
      unseen += added
      show()
    }
    lastHeight = height()
  }).observe(tr, { childList: true, subtree: true })
}

function start () {
  stickyEdges()
  watchTransport()
  watchEnd()
  followLive()
  jumpOnLoad()
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start)
else start()
