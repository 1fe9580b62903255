package dev.tether.cli;

/** Whether standard output is an interactive terminal that takes colour. */
final class Terminal {
  private Terminal() {}

  static boolean colour() {
    return System.console() != null
        && System.getenv("NO_COLOR") == null
        && !"dumb".equals(System.getenv("TERM"));
  }
}
