import "./style.css";

/** Text of the placeholder screen, kept in one place so it is easy to replace. */
const PLACEHOLDER = {
  title: "gate supervisor (coming soon)",
  note:
    "This is the gatemesh desktop shell. The gate supervisor screens " +
    "(ticket scanning, gate status, entry counts) will live here.",
} as const;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string } = {},
  ...children: Node[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className !== undefined) node.className = props.className;
  if (props.text !== undefined) node.textContent = props.text;
  node.append(...children);
  return node;
}

function renderPlaceholder(root: HTMLElement): void {
  const heading = el(
    "h1",
    {},
    el("span", { className: "brand", text: "gatemesh" }),
    document.createTextNode(` — ${PLACEHOLDER.title}`),
  );
  const card = el(
    "main",
    { className: "placeholder" },
    heading,
    el("p", { text: PLACEHOLDER.note }),
    el("p", { className: "meta", text: `UI build ${import.meta.env.MODE}` }),
  );
  root.replaceChildren(card);
}

const root = document.querySelector<HTMLElement>("#app");
if (root === null) {
  throw new Error("gatemesh ui: #app element missing from index.html");
}
renderPlaceholder(root);
