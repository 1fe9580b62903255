package dev.tether.cli.internal;

import java.nio.ByteBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Keeps the last {@code capacity} bytes written to it, and counts all bytes. Thread-safe (one
 * writer, any number of readers).
 */
public final class TailBuffer {
  private final byte[] ring;
  private long total; // guarded by this

  /**
   * Creates a buffer.
   *
   * @param capacity bytes to keep, at least 1
   * @throws IllegalArgumentException if {@code capacity < 1}
   */
  public TailBuffer(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("tail capacity must be >= 1 byte, was " + capacity);
    }
    this.ring = new byte[capacity];
  }

  /**
   * Appends bytes.
   *
   * @param b the array
   * @param off the offset
   * @param len the length
   */
  public synchronized void write(byte[] b, int off, int len) {
    int cap = ring.length;
    for (int i = Math.max(0, len - cap); i < len; i++) {
      ring[(int) ((total + i) % cap)] = b[off + i];
    }
    total += len;
  }

  /**
   * Returns the bytes kept, oldest first.
   *
   * @return a copy of the tail
   */
  public synchronized byte[] bytes() {
    int cap = ring.length;
    int n = (int) Math.min(total, cap);
    byte[] out = new byte[n];
    long start = total - n;
    for (int i = 0; i < n; i++) {
      out[i] = ring[(int) ((start + i) % cap)];
    }
    return out;
  }

  /**
   * Returns the total number of bytes ever written.
   *
   * @return the count
   */
  public synchronized long total() {
    return total;
  }

  /**
   * Returns the tail decoded as UTF-8; malformed or cut sequences become U+FFFD, so the text is
   * always valid to store and print.
   *
   * @return the text
   */
  public String text() {
    return decode(bytes());
  }

  /**
   * Decodes bytes as UTF-8, replacing malformed input with U+FFFD.
   *
   * @param bytes the bytes
   * @return the text
   */
  public static String decode(byte[] bytes) {
    CharsetDecoder d =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE);
    try {
      return d.decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw new IllegalStateException("decoder set to REPLACE threw; indicates a bug", e);
    }
  }
}
