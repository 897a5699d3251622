// Funnybone researcher pages: copy buttons. A button with data-copy="ID" copies the
// value of the field with that id; without JavaScript the field stays selectable.
// A file rather than an inline script, so the Content-Security-Policy allows it as is.
// SPDX-License-Identifier: GPL-3.0-or-later
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var field = document.getElementById(button.dataset.copy);
    if (!field || !navigator.clipboard) {
      if (field) field.select();
      return;
    }
    navigator.clipboard.writeText(field.value).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });
})();
