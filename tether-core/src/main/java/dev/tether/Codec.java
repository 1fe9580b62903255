package dev.tether;


/**
 * Turns values into bytes and back: message bodies of a durable mailbox, progress checkpoints.
 * Implementations must be thread-safe; they may throw any runtime exception, which the caller
 * reports with the value's context (a mailbox as a {@link
 * dev.tether.mailbox.SerializationException}).
 *
 * @param <T> the value type
 */
public interface Codec<T> {
  /**
   * Encodes a value.
   *
   * @param value the value; not null
   * @return the bytes
   */
  byte[] encode(T value);

  /**
   * Decodes a value.
   *
   * @param bytes the bytes
   * @return the value
   */
  T decode(byte[] bytes);

  /**
   * Returns the UTF-8 text codec: text that is not valid Unicode, or bytes that are not valid
   * UTF-8, are an error, never replaced.
   *
   * @return the codec
   */
  static Codec<String> utf8() {
    return Codecs.Utf8.INSTANCE;
  }

  /**
   * Returns the identity codec for raw bytes (values are copied both ways).
   *
   * @return the codec
   */
  static Codec<byte[]> bytes() {
    return Codecs.Bytes.INSTANCE;
  }
}
