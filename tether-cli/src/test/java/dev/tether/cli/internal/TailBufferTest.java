package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TailBufferTest {
  @Test
  void keepsOnlyTheLastBytesAndCountsAll() {
    TailBuffer t = new TailBuffer(5);
    t.write("abc".getBytes(StandardCharsets.UTF_8), 0, 3);
    assertThat(t.text()).isEqualTo("abc");
    t.write("defg".getBytes(StandardCharsets.UTF_8), 0, 4);
    assertThat(t.text()).isEqualTo("cdefg");
    t.write("0123456789".getBytes(StandardCharsets.UTF_8), 2, 8);
    assertThat(t.text()).isEqualTo("56789");
    assertThat(t.total()).isEqualTo(15);
  }

  @Test
  void malformedUtf8BecomesReplacementCharacters() {
    TailBuffer t = new TailBuffer(16);
    byte[] b = {(byte) 0xff, 'o', 'k', (byte) 0xe2, (byte) 0x82};
    t.write(b, 0, b.length);
    assertThat(t.text()).startsWith("\uFFFDok").endsWith("\uFFFD");
  }
}
