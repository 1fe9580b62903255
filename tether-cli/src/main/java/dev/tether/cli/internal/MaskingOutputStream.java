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

  private final Held line = new Held();
  /**
   * How many bytes at the start of {@link #line} are known to hold no blank or quote: a long
   * line's bytes are looked at once, not again at every write while it is held.
   */
  private int scanned;

  /** The bytes held, readable in place. */
  private static final class Held extends ByteArrayOutputStream {
    Held() {
      super(256);
    }

    byte at(int i) {
      return buf[i];
    }

    /** Writes the first {@code n} bytes to {@code into}, masked, and keeps the rest. */
    void writeFirst(int n, MaskingOutputStream into) throws IOException {
      into.writeMasked(java.util.Arrays.copyOf(buf, n));
      System.arraycopy(buf, n, buf, 0, count - n);
      count -= n;
    }
  }

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
    scanned = 0;
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
    int size = line.size();
    int cut = size;
    while (cut > scanned && !endsEveryPassword(line.at(cut - 1))) {
      cut--;
    }
    if (cut == scanned) { // none among the bytes not looked at yet, so none at all
      scanned = size;
      if (size < MAX_HELD) {
        return;
      }
      cut = size;
    }
    line.writeFirst(cut, this);
    scanned = line.size(); // what follows the last blank or quote holds none
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
