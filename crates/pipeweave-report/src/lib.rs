//! Compare, sweep and recommend; SVG and HTML rendering.
