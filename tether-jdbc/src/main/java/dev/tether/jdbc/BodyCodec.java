package dev.tether.jdbc;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Turns message bodies into bytes and back for {@link JdbcMailbox}. Implementations must be
 * thread-safe; they may throw any runtime exception, which the mailbox reports as a {@link
 * dev.tether.mailbox.SerializationException}.
 *
 * @param <T> the body type
 */
public interface BodyCodec<T> {
  /**
   * Encodes a body.
   *
   * @param body the body; not null
   * @return the bytes
   */
  byte[] encode(T body);

  /**
   * Decodes a body.
   *
   * @param bytes the bytes
   * @return the body
   */
  T decode(byte[] bytes);

  /**
   * Returns the UTF-8 text codec (malformed input is an error, not replaced).
   *
   * @return the codec
   */
  static BodyCodec<String> utf8() {
    return new BodyCodec<>() {
      @Override
      public byte[] encode(String body) {
        try {
          ByteBuffer b = StandardCharsets.UTF_8.newEncoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .encode(java.nio.CharBuffer.wrap(body));
          byte[] out = new byte[b.remaining()];
          b.get(out);
          return out;
        } catch (CharacterCodingException e) {
          throw new IllegalArgumentException("the text is not valid Unicode (unpaired surrogate?)", e);
        }
      }

      @Override
      public String decode(byte[] bytes) {
        try {
          return StandardCharsets.UTF_8.newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
          throw new IllegalArgumentException("the stored body is not valid UTF-8", e);
        }
      }

      @Override
      public String toString() {
        return "BodyCodec.utf8()";
      }
    };
  }

  /**
   * Returns the identity codec for raw bytes (bodies are copied).
   *
   * @return the codec
   */
  static BodyCodec<byte[]> bytes() {
    return new BodyCodec<>() {
      @Override
      public byte[] encode(byte[] body) {
        return body.clone();
      }

      @Override
      public byte[] decode(byte[] bytes) {
        return bytes.clone();
      }

      @Override
      public String toString() {
        return "BodyCodec.bytes()";
      }
    };
  }
}
