package dev.tether.cli.internal;

import java.io.ByteArrayOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Standard error as the CLI writes it: each line passes through {@link StoreLocation#mask} before
 * it reaches the stream, so that a database password in a URL never shows, whoever prints the
 * line (Tether's own messages, a library's log line, a stack trace under {@code --verbose}).
 *
 * <p>Bytes are held until a line ends, {@link #flush()} is called or {@value #MAX_LINE} bytes are
 * held; a line with nothing to mask is written as it came, byte for byte. A line that long is
 * written up to its last blank or quote (space, tab, carriage return, form feed, {@code '} or
 * {@code "}), and the rest held: a password in a URL never holds one of those, so it is never cut
 * in two pieces masked apart. A line without any is held up to {@value #MAX_HELD} bytes, then
 * written as it is. A flush in the middle
 * of a line writes what it has, so wrap it in a {@link java.io.PrintStream} without autoflush
 * (which would flush at every {@code print}). Thread-safe.
 */
public final class MaskingOutputStream extends FilterOutputStream {
  /** The most bytes held before they are written without waiting for the end of the line. */
  static final int MAX_LINE = 64 * 1024;

  /** The most bytes held of a line with no blank or quote to cut it at. */
  static final int MAX_HELD = 1024 * 1024;

  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);

  /**
   * Masks what is written to {@code out}.
   *
   * @param out the stream written to
   */
  public MaskingOutputStream(OutputStream out) {
    super(out);
  }

  @Override
  public synchronized void write(int b) throws IOException {
    line.write(b);
    if (b == '\n') {
      emit();
    } else if (line.size() >= MAX_LINE) {
      emitLong();
    }
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    int start = off;
    int end = off + len;
    for (int i = off; i < end; i++) {
      if (b[i] == '\n') {
        line.write(b, start, i + 1 - start);
        emit();
        start = i + 1;
      }
    }
    line.write(b, start, end - start);
    if (line.size() >= MAX_LINE) {
      emitLong();
    }
  }

  @Override
  public synchronized void flush() throws IOException {
    emit();
    out.flush();
  }

  @Override
  public synchronized void close() throws IOException {
    flush();
    out.close();
  }

  private void emit() throws IOException {
    if (line.size() == 0) {
      return;
    }
    byte[] bytes = line.toByteArray();
    line.reset();
    writeMasked(bytes);
  }

  /**
   * Writes a line that grew to {@value #MAX_LINE} bytes without ending: up to and with its last
   * blank or quote, keeping the rest; nothing if it has none, until it holds {@value #MAX_HELD}
   * bytes, then all of it.
   */
  private void emitLong() throws IOException {
    byte[] bytes = line.toByteArray();
    int cut = bytes.length;
    while (cut > 0 && !endsEveryPassword(bytes[cut - 1])) {
      cut--;
    }
    if (cut == 0) {
      if (bytes.length < MAX_HELD) {
        return;
      }
      cut = bytes.length;
    }
    line.reset();
    line.write(bytes, cut, bytes.length - cut);
    writeMasked(cut == bytes.length ? bytes : java.util.Arrays.copyOf(bytes, cut));
  }

  /** A byte that no password {@link StoreLocation#mask} finds can hold (see its patterns). */
  private static boolean endsEveryPassword(byte b) {
    return b == ' ' || b == '\t' || b == '\r' || b == '\f' || b == 0x0B || b == '\'' || b == '"';
  }

  private void writeMasked(byte[] bytes) throws IOException {
    String text = new String(bytes, StandardCharsets.UTF_8);
    String masked = StoreLocation.mask(text);
    out.write(masked.equals(text) ? bytes : masked.getBytes(StandardCharsets.UTF_8));
  }
}
