/* Behaviour shared by every page, in a file because the Content-Security-Policy runs no
 * inline script or on* attribute:
 *  - <form data-confirm="question"> asks before it submits (start, cancel, retire, revoke);
 *  - <button data-copy="element-id"> copies that element's text (tokens, commands).
 * Both listen on the document, so sections the progress script swaps in keep working.
 */
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute && event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });

  function copied(button) {
    var label = button.textContent;
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = label; }, 1500);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    function selectAndCopy() {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      document.execCommand("copy");
      copied(button);
    }
    if (navigator.clipboard && window.isSecureContext) {
      // Refused (no permission): select the text instead, so Ctrl-C still works.
      navigator.clipboard.writeText(source.textContent).then(function () { copied(button); }, selectAndCopy);
    } else {
      selectAndCopy();
    }
  });
})();
