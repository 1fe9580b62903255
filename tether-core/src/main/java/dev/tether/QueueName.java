package dev.tether;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The rule every queue and mailbox name follows, in every backend: a letter or digit, then up to
 * 127 letters, digits, {@code .}, {@code _}, {@code :} or {@code -} (ASCII only; 1 to {@value
 * #MAX_LENGTH} characters; case-sensitive). Names are therefore safe in URLs, file names, metric
 * labels, log lines and SQL identifiers, carry no SQL {@code LIKE} wildcard ({@code %}) and no
 * quote, and look the same in every terminal.
 *
 * <p>Stateless and thread-safe.
 */
public final class QueueName {
  /** Longest name, in characters: {@value}. */
  public static final int MAX_LENGTH = 128;

  /** The rule as a regular expression (the whole name must match). */
  public static final String REGEX = "[A-Za-z0-9][A-Za-z0-9._:-]{0," + (MAX_LENGTH - 1) + "}";

  private static final Pattern PATTERN = Pattern.compile(REGEX);
  private static final int SHOWN = 80;

  private QueueName() {}

  /**
   * Returns whether {@code name} follows the rule.
   *
   * @param name a candidate name, or null
   * @return true if it is a valid queue name (null is not)
   */
  public static boolean isValid(String name) {
    return name != null && name.length() <= MAX_LENGTH && PATTERN.matcher(name).matches();
  }

  /**
   * Returns {@code name} if it follows the rule.
   *
   * @param name the name to check
   * @param what what the name is, for the message (for example {@code "queue"} or {@code
   *     "replyTo"})
   * @return {@code name}
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException if it breaks the rule; the message names the rule and shows
   *     the value with control and non-ASCII characters escaped and cut to 80 characters
   */
  public static String requireValid(String name, String what) {
    Objects.requireNonNull(name, what);
    if (!isValid(name)) {
      throw new IllegalArgumentException(
          what
              + " name must match "
              + REGEX
              + " (a letter or digit, then up to "
              + (MAX_LENGTH - 1)
              + " ASCII letters, digits, '.', '_', ':' or '-'), was "
              + describe(name));
    }
    return name;
  }

  /** Shows a rejected name safely: quoted, escaped, shortened, with its length. */
  static String describe(String name) {
    StringBuilder sb = new StringBuilder("\"");
    int shown = Math.min(name.length(), SHOWN);
    for (int i = 0; i < shown; i++) {
      char ch = name.charAt(i);
      if (ch == '"' || ch == '\\') {
        sb.append('\\').append(ch);
      } else if (ch >= 0x20 && ch < 0x7f) {
        sb.append(ch);
      } else {
        sb.append(String.format("\\u%04x", (int) ch));
      }
    }
    sb.append('"');
    if (name.length() > SHOWN) {
      sb.append("... (").append(name.length()).append(" characters)");
    } else if (name.isEmpty()) {
      sb.append(" (empty)");
    }
    return sb.toString();
  }
}
