package dev.tether.jdbc;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code headers} column: an item's small text attributes (a trace context, say) as {@code
 * key=value} pairs joined by {@code &}, each part percent-encoded in UTF-8; NULL when there are
 * none. Stateless.
 */
final class Headers {
  /** Most headers one item carries. */
  static final int MAX_ENTRIES = 32;

  /** Longest encoded headers of one item, in characters. */
  static final int MAX_ENCODED_CHARS = 8 * 1024;

  private Headers() {}

  /**
   * Checks {@code headers} and returns an unmodifiable copy (insertion order kept).
   *
   * @throws IllegalArgumentException if a key is blank, a key or value null, or they are too many
   *     or too large encoded
   */
  static Map<String, String> checked(Map<String, String> headers) {
    if (headers.size() > MAX_ENTRIES) {
      throw new IllegalArgumentException("an item carries at most " + MAX_ENTRIES
          + " headers, was given " + headers.size());
    }
    Map<String, String> copy = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : headers.entrySet()) {
      if (e.getKey() == null || e.getKey().isBlank() || e.getValue() == null) {
        throw new IllegalArgumentException("header keys must not be blank and values not null,"
            + " was " + e.getKey() + "=" + e.getValue());
      }
      copy.put(e.getKey(), e.getValue());
    }
    String encoded = encode(copy);
    if (encoded != null && encoded.length() > MAX_ENCODED_CHARS) {
      throw new IllegalArgumentException("headers are " + encoded.length()
          + " characters encoded, over the limit of " + MAX_ENCODED_CHARS
          + ": keep large data in the body");
    }
    return Collections.unmodifiableMap(copy);
  }

  /** The column value: null for no headers. */
  static String encode(Map<String, String> headers) {
    if (headers.isEmpty()) {
      return null;
    }
    StringBuilder b = new StringBuilder();
    for (Map.Entry<String, String> e : headers.entrySet()) {
      if (b.length() > 0) {
        b.append('&');
      }
      b.append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
          .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
    }
    return b.toString();
  }

  /** The headers of a column value (null or empty: none). */
  static Map<String, String> decode(String column) {
    if (column == null || column.isEmpty()) {
      return Map.of();
    }
    Map<String, String> headers = new LinkedHashMap<>();
    for (String part : column.split("&")) {
      int eq = part.indexOf('=');
      if (eq <= 0) {
        throw new IllegalStateException("malformed headers column part '" + part
            + "'; indicates a bug or a row written by hand");
      }
      headers.put(URLDecoder.decode(part.substring(0, eq), StandardCharsets.UTF_8),
          URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return Collections.unmodifiableMap(headers);
  }
}
