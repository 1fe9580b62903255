package dev.tether.cli.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a command line into words with POSIX shell quoting rules, without running a shell and
 * without expanding anything: whitespace separates words; single quotes keep everything literally;
 * double quotes keep everything but a backslash before {@code "}, {@code \}, {@code $}, {@code `}
 * or a newline; outside quotes a backslash makes the next character literal. Stateless and
 * thread-safe.
 */
public final class ShellWords {
  private ShellWords() {}

  /**
   * Splits {@code line} into words.
   *
   * @param line the command line
   * @return the words, possibly empty for a blank line
   * @throws IllegalArgumentException on an unterminated quote or a trailing backslash, naming the
   *     position
   */
  public static List<String> split(String line) {
    List<String> words = new ArrayList<>();
    StringBuilder word = new StringBuilder();
    boolean inWord = false;
    int i = 0;
    int n = line.length();
    while (i < n) {
      char c = line.charAt(i);
      if (c == '\'') {
        int end = line.indexOf('\'', i + 1);
        if (end < 0) {
          throw new IllegalArgumentException(
              "unterminated single quote at column " + (i + 1) + " in: " + line);
        }
        word.append(line, i + 1, end);
        inWord = true;
        i = end + 1;
      } else if (c == '"') {
        int start = i;
        i++;
        boolean closed = false;
        while (i < n) {
          char d = line.charAt(i);
          if (d == '"') {
            closed = true;
            i++;
            break;
          }
          if (d == '\\' && i + 1 < n) {
            char e = line.charAt(i + 1);
            if (e == '"' || e == '\\' || e == '$' || e == '`') {
              word.append(e);
              i += 2;
              continue;
            }
            if (e == '\n') {
              i += 2;
              continue;
            }
          }
          word.append(d);
          i++;
        }
        if (!closed) {
          throw new IllegalArgumentException(
              "unterminated double quote at column " + (start + 1) + " in: " + line);
        }
        inWord = true;
      } else if (c == '\\') {
        if (i + 1 >= n) {
          throw new IllegalArgumentException(
              "trailing backslash at column " + (i + 1) + " in: " + line);
        }
        char e = line.charAt(i + 1);
        if (e != '\n') {
          word.append(e);
          inWord = true;
        }
        i += 2;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        if (inWord) {
          words.add(word.toString());
          word.setLength(0);
          inWord = false;
        }
        i++;
      } else {
        word.append(c);
        inWord = true;
        i++;
      }
    }
    if (inWord) {
      words.add(word.toString());
    }
    return words;
  }
}
