// Funnybone annotator: keyboard shortcuts, vote counters, picture zoom, focus after htmx swaps.
// No inline scripts anywhere: everything hangs off data attributes, so a strict
// Content-Security-Policy can forbid inline code. Without this file every form
// still works with plain clicks and posts.
// SPDX-License-Identifier: GPL-3.0-or-later
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  function answerForm() {
    return document.querySelector("#item-card form[data-task]");
  }

  function isTyping(element) {
    if (!element || !element.tagName) return false;
    var tag = element.tagName.toLowerCase();
    // A focused radio button is a choice, not a text field: its keys stay shortcuts.
    if (tag === "input" && (element.type === "radio" || element.type === "checkbox")) return false;
    return tag === "input" || tag === "textarea" || tag === "select" || element.isContentEditable;
  }

  function submit(form, submitter) {
    var button = submitter || form.querySelector("button[type=submit]");
    // :disabled also covers buttons inside the fieldset htmx disables while a request is out.
    if (button && button.matches(":disabled")) return;
    if (typeof form.requestSubmit === "function") {
      form.requestSubmit(button || undefined);
    } else if (button) {
      button.click();
    }
  }

  // -- vote allocation ----------------------------------------------------------

  function voteFieldset(form) {
    return form.querySelector("fieldset[data-max-votes]");
  }

  function countOf(input) {
    var n = parseInt(input.value, 10);
    return isNaN(n) || n < 0 ? 0 : n;
  }

  function refreshVotes(fieldset) {
    var max = parseInt(fieldset.dataset.maxVotes, 10);
    var repeat = fieldset.dataset.allowRepeat === "true";
    var inputs = fieldset.querySelectorAll("input.vote-count");
    var used = 0;
    inputs.forEach(function (input) { used += countOf(input); });
    var left = Math.max(0, max - used);
    var output = fieldset.querySelector("[data-votes-left]");
    if (output) output.textContent = String(left);
    fieldset.querySelectorAll("button[data-vote-step]").forEach(function (button) {
      var input = document.getElementById(button.dataset.voteFor);
      if (!input) return;
      var n = countOf(input);
      button.disabled = button.dataset.voteStep === "1" ? left === 0 || (!repeat && n >= 1) : n === 0;
    });
  }

  function stepVote(input, delta) {
    var fieldset = input.closest("fieldset[data-max-votes]");
    var max = parseInt(fieldset.dataset.maxVotes, 10);
    var repeat = fieldset.dataset.allowRepeat === "true";
    var used = 0;
    fieldset.querySelectorAll("input.vote-count").forEach(function (other) { used += countOf(other); });
    var n = countOf(input);
    if (delta > 0 && (used >= max || (!repeat && n >= 1))) return;
    if (delta < 0 && n === 0) return;
    input.value = String(n + delta);
    refreshVotes(fieldset);
  }

  document.addEventListener("click", function (event) {
    var step = event.target.closest("button[data-vote-step]");
    if (step) {
      var input = document.getElementById(step.dataset.voteFor);
      if (input) stepVote(input, parseInt(step.dataset.voteStep, 10));
      return;
    }
    var copy = event.target.closest("button[data-copy]");
    if (copy) copyCode(copy);
    var zoom = event.target.closest("a[data-zoom]");
    if (zoom && openPicture(zoom)) event.preventDefault();
    var dialog = pictureDialog();
    // A click on the backdrop (the dialog element itself, outside its contents) closes it.
    if (dialog && event.target === dialog) dialog.close();
  });

  // -- pictures: a picture's link opens it larger in the page's dialog ------------
  // Without the script (or without <dialog>) the link simply shows the file.

  function pictureDialog() {
    return document.getElementById("picture-dialog");
  }

  function openPicture(link) {
    var dialog = pictureDialog();
    var image = dialog && dialog.querySelector("img[data-zoom-image]");
    var small = link.querySelector("img");
    if (!image || !small || typeof dialog.showModal !== "function") return false;
    image.src = link.getAttribute("href");
    image.alt = small.alt;
    dialog.showModal();
    // Focus goes back to the link when the dialog closes (the browser remembers the opener).
    return true;
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("input.vote-count")) {
      refreshVotes(event.target.closest("fieldset[data-max-votes]"));
    }
  });

  // -- keyboard -----------------------------------------------------------------

  function digitOf(event) {
    // event.code survives Shift (Shift+1 types "!" on most layouts).
    var match = /^(?:Digit|Numpad)([0-9])$/.exec(event.code || "");
    if (match) return match[1];
    return /^[0-9]$/.test(event.key) ? event.key : null;
  }

  function handleVoteKeys(event, form) {
    var fieldset = voteFieldset(form);
    if (!fieldset) return false;
    if (event.key === "Enter") {
      var target = event.target;
      if (target && target.tagName && target.tagName.toLowerCase() === "button") return false;
      submit(form, form.querySelector("button[data-submit]"));
      return true;
    }
    var digit = digitOf(event);
    if (digit === null) return false;
    var input = fieldset.querySelector('input[data-vote-key="' + digit + '"]');
    if (!input) return false;
    if (!input.matches(":disabled")) stepVote(input, event.shiftKey ? -1 : 1);
    return true;
  }

  // -- best-worst: 1-4 mark the funniest, Shift+1-4 the least funny, Enter submits --------

  function bestWorstFieldset(form) {
    return form.querySelector("fieldset[data-best-worst]");
  }

  function handleBestWorstKeys(event, form) {
    var fieldset = bestWorstFieldset(form);
    if (!fieldset) return false;
    if (event.key === "Enter") {
      var target = event.target;
      if (target && target.tagName && target.tagName.toLowerCase() === "button") return false;
      submit(form, form.querySelector("button[data-submit]"));
      return true;
    }
    var digit = digitOf(event);
    if (digit === null) return false;
    var role = event.shiftKey ? "worst" : "best";
    var other = event.shiftKey ? "best" : "worst";
    var input = fieldset.querySelector('input[name="' + role + '"][data-key="' + digit + '"]');
    if (!input || input.matches(":disabled")) return !!input;
    input.checked = true;
    // One joke cannot be both: marking it for one role clears it from the other.
    var clash = fieldset.querySelector('input[name="' + other + '"][data-key="' + digit + '"]');
    if (clash && clash.checked) clash.checked = false;
    return true;
  }

  function handleButtonKeys(event, form) {
    if (event.shiftKey) return false;
    var key = (event.key || "").toLowerCase();
    if (!key || key.length !== 1) return false;
    var buttons = form.querySelectorAll("button[data-key]");
    for (var i = 0; i < buttons.length; i++) {
      var button = buttons[i];
      if (button.dataset.key === key || (button.dataset.altKey && button.dataset.altKey === key)) {
        if (!button.matches(":disabled")) button.click();
        return true;
      }
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    // Leave composing input methods (Chinese, Japanese, ...) and browser shortcuts alone.
    if (event.defaultPrevented || event.isComposing || event.altKey) return;
    // While a picture is enlarged, keys belong to the dialog (Esc closes it), never to the answer.
    var dialog = pictureDialog();
    if (dialog && dialog.open) return;
    var form = answerForm();
    if (!form) return;
    var target = event.target;

    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target.matches && target.matches("textarea[data-ctrl-enter-submits]")) {
      event.preventDefault();
      submit(form);
      return;
    }
    // Typing is typing: a micro-edit's Enter submits its form natively.
    if (isTyping(target) || event.ctrlKey || event.metaKey) return;
    // Enter on a focused link follows it (a picture's link opens it larger); it submits nothing.
    if (event.key === "Enter" && target.closest && target.closest("a[href]")) return;

    // Each form says by its fieldset which keys it takes; plain answer buttons otherwise.
    var handled;
    if (voteFieldset(form)) handled = handleVoteKeys(event, form);
    else if (bestWorstFieldset(form)) handled = handleBestWorstKeys(event, form);
    else handled = handleButtonKeys(event, form);
    if (handled) event.preventDefault();
  });

  // -- after each new item -------------------------------------------------------

  function prepare(root) {
    var form = root.querySelector ? root.querySelector("form[data-task]") : null;
    if (form) {
      var fieldset = voteFieldset(form);
      if (fieldset) refreshVotes(fieldset);
    }
    document.querySelectorAll("button[data-copy][hidden]").forEach(function (button) {
      if (navigator.clipboard) button.hidden = false;
    });
  }

  function status(text) {
    var box = document.getElementById("connection-status");
    if (box) box.textContent = text;
  }

  document.addEventListener("DOMContentLoaded", function () { prepare(document); });

  // The lease heartbeat (item.html) polls in the background: its answers neither move focus
  // nor speak about the user's answer; a lost lease brings its own alert.
  function fromHeartbeat(event) {
    var elt = event.detail && event.detail.elt;
    return !!elt && elt.id === "lease-heartbeat";
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    if (fromHeartbeat(event) || (event.target && event.target.id === "lease-heartbeat")) return;
    var card = document.getElementById("item-card");
    if (!card || !(event.target === card || card.contains(event.target) || event.target.contains(card))) return;
    status("");
    prepare(card);
    // Move focus to the new item so keyboard and screen-reader users start from its question.
    var invalid = card.querySelector("[aria-invalid=true]");
    var heading = document.getElementById("item-heading");
    if (invalid) invalid.focus();
    else if (heading) heading.focus();
  });

  // The words come from the page, in the study's language (data-* on #connection-status).
  function said(name) {
    var box = document.getElementById("connection-status");
    return (box && box.dataset[name]) || "";
  }

  document.addEventListener("htmx:sendError", function (event) {
    if (fromHeartbeat(event)) return;
    status(said("sendError"));
  });

  document.addEventListener("htmx:responseError", function (event) {
    if (fromHeartbeat(event)) return;
    status(said("responseError"));
  });

  function copyCode(button) {
    var source = document.getElementById(button.dataset.copy);
    var note = button.parentElement.querySelector(".copy-status");
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(
      function () { if (note) note.textContent = button.dataset.copied || ""; },
      function () { if (note) note.textContent = button.dataset.copyFailed || ""; }
    );
  }
})();
