package dev.tether;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** The codecs {@link Codec} provides. */
final class Codecs {
  private Codecs() {}

  /** The UTF-8 text codec. */
  static final class Utf8 implements Codec<String> {
    static final Utf8 INSTANCE = new Utf8();

    private Utf8() {}

    @Override
    public byte[] encode(String value) {
      try {
        ByteBuffer b = StandardCharsets.UTF_8.newEncoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .encode(CharBuffer.wrap(value));
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
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes)).toString();
      } catch (CharacterCodingException e) {
        throw new IllegalArgumentException("the stored bytes are not valid UTF-8", e);
      }
    }

    @Override
    public String toString() {
      return "Codec.utf8()";
    }
  }

  /** The identity codec for raw bytes. */
  static final class Bytes implements Codec<byte[]> {
    static final Bytes INSTANCE = new Bytes();

    private Bytes() {}

    @Override
    public byte[] encode(byte[] value) {
      return value.clone();
    }

    @Override
    public byte[] decode(byte[] bytes) {
      return bytes.clone();
    }

    @Override
    public String toString() {
      return "Codec.bytes()";
    }
  }
}
