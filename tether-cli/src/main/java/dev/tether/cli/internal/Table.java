package dev.tether.cli.internal;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** An aligned text table, coloured when asked to. Not thread-safe. */
public final class Table {
  private final List<String> headers;
  private final List<List<String>> rows = new ArrayList<>();

  /**
   * Creates a table.
   *
   * @param headers column titles
   */
  public Table(String... headers) {
    this.headers = List.of(headers);
  }

  /**
   * Adds a row; null cells print as {@code -}; control characters are shown as {@code ?}.
   *
   * @param cells the cells
   * @return this table
   */
  public Table row(Object... cells) {
    List<String> r = new ArrayList<>();
    for (Object c : cells) {
      r.add(clean(c == null ? "-" : c.toString()));
    }
    rows.add(r);
    return this;
  }

  /**
   * Removes control characters (terminal escapes) and cuts long text.
   *
   * @param s the text
   * @return printable text
   */
  public static String clean(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length() && b.length() < 120; i++) {
      char ch = s.charAt(i);
      b.append(Character.isISOControl(ch) ? (ch == '\n' ? ' ' : '?') : ch);
    }
    if (b.length() >= 120 && s.length() > 120) {
      b.setLength(119);
      b.append('…');
    }
    return b.toString();
  }

  /**
   * Prints the table.
   *
   * @param out where to
   * @param colour whether to use ANSI colour
   */
  public void print(PrintWriter out, boolean colour) {
    int[] w = new int[headers.size()];
    for (int i = 0; i < w.length; i++) {
      w[i] = headers.get(i).length();
      for (List<String> r : rows) {
        if (i < r.size()) {
          w[i] = Math.max(w[i], r.get(i).length());
        }
      }
    }
    StringBuilder h = new StringBuilder();
    for (int i = 0; i < w.length; i++) {
      h.append(pad(headers.get(i), w[i], i == w.length - 1));
    }
    out.println(colour ? "\u001b[1m" + h.toString().stripTrailing() + "\u001b[0m" : h.toString().stripTrailing());
    for (List<String> r : rows) {
      StringBuilder b = new StringBuilder();
      for (int i = 0; i < w.length; i++) {
        String cell = i < r.size() ? r.get(i) : "";
        String padded = pad(cell, w[i], i == w.length - 1);
        if (colour) {
          padded = colourFor(cell, padded);
        }
        b.append(padded);
      }
      out.println(b.toString().stripTrailing());
    }
    out.flush();
  }

  private static String pad(String s, int width, boolean last) {
    StringBuilder b = new StringBuilder(s);
    while (b.length() < width) {
      b.append(' ');
    }
    if (!last) {
      b.append("  ");
    }
    return b.toString();
  }

  private static String colourFor(String cell, String padded) {
    switch (cell) {
      case "completed":
        return "\u001b[32m" + padded + "\u001b[0m";
      case "failed":
        return "\u001b[31m" + padded + "\u001b[0m";
      case "in_progress":
        return "\u001b[33m" + padded + "\u001b[0m";
      case "pending":
        return "\u001b[36m" + padded + "\u001b[0m";
      default:
        return padded;
    }
  }
}
