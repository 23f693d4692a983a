// Keyboard navigation for the TA review pages. No framework: the pages work without it.
(function () {
  "use strict";
  var typing = function (el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  };
  var go = function (selector) {
    var link = document.querySelector(selector);
    if (link && link.href) { window.location.assign(link.href); }
  };

  // The queue: j/k (or arrows) move the selection, Enter opens it.
  var rows = Array.prototype.slice.call(document.querySelectorAll("#queue tbody tr"));
  var current = rows.findIndex(function (r) { return r.classList.contains("selected"); });
  var select = function (index) {
    if (!rows.length) { return; }
    current = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (r, i) { r.classList.toggle("selected", i === current); r.setAttribute("aria-selected", i === current); });
    rows[current].focus();
  };
  rows.forEach(function (r, i) {
    r.addEventListener("click", function (event) {
      if (event.target.tagName !== "A") { select(i); window.location.assign(r.dataset.href); }
    });
  });

  // A case: c/d pick the action for the first suspected veto, o the points of an item; the reason
  // field takes the focus; Ctrl+Enter (or Cmd+Enter) records.
  var vetoForm = function () {
    return document.querySelector(".veto-suspected .veto-form") || document.querySelector(".veto-form");
  };
  var itemForm = function () {
    return document.querySelector(".item.status-needs_review .item-form") || document.querySelector(".item-form");
  };
  var decideVeto = function (action) {
    var form = vetoForm();
    if (!form) { return; }
    form.closest("details").open = true;
    form.querySelector('input[value="' + action + '"]').checked = true;
    form.scrollIntoView({ block: "center" });
    form.querySelector("textarea").focus();
  };

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (typing(target)) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target.form) {
        event.preventDefault();
        if (target.form.reportValidity()) { target.form.requestSubmit(); }
      } else if (event.key === "Escape") {
        target.blur();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    switch (event.key) {
      case "j": case "ArrowDown": if (rows.length) { event.preventDefault(); select(current + 1); } break;
      case "k": case "ArrowUp": if (rows.length) { event.preventDefault(); select(current - 1); } break;
      case "Enter":  // a focused link or button keeps its own Enter (the top bar's links, the filters)
        if (rows.length && current >= 0 && !(target.closest && target.closest("a, button, summary"))) {
          event.preventDefault(); window.location.assign(rows[current].dataset.href);
        }
        break;
      case "n": if (rows.length) { window.location.assign(rows[0].dataset.href); } else { go("#next-case"); } break;
      case "p": go("#prev-case"); break;
      case "q": go("#to-queue"); break;
      case "c": event.preventDefault(); decideVeto("confirm"); break;
      case "d": event.preventDefault(); decideVeto("dismiss"); break;
      case "o": {
        var form = itemForm();
        if (form) {
          event.preventDefault();
          form.closest("details").open = true;
          form.scrollIntoView({ block: "center" });
          var points = form.querySelector('input[name="points"]');
          points.focus();
          points.select();
        }
        break;
      }
      default: break;
    }
  });
})();
