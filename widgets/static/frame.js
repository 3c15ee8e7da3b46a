// The tab bar of every front end (the report, and the tab component of the stepper and the
// Panel app, static/tabs.js): `bar` holds the buttons of widgets/frame.py's tab_bar_html
// (data-tab: a view's key); a click calls onPick(key). Returns mark(key), which marks the
// button shown.
function plTabs(bar, onPick) {
  bar.addEventListener("click", (e) => {
    const b = e.target.closest("button[data-tab]");
    if (b && bar.contains(b)) onPick(b.dataset.tab);
  });
  return (key) => bar.querySelectorAll("button[data-tab]").forEach((b) => {
    const on = b.dataset.tab === key;
    b.classList.toggle("pl-on", on);
    if (on && b.scrollIntoView && bar.scrollWidth > bar.clientWidth) b.scrollIntoView({ block: "nearest", inline: "nearest" });
  });
}
