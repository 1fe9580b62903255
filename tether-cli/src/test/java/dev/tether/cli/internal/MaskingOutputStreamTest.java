package dev.tether.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Standard error with every password in a URL masked, whatever writes the line. */
class MaskingOutputStreamTest {
  @Test
  void linesArriveMaskedWhateverTheyWereWrittenIn() throws Exception {
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    // as TetherCli.main sets it up: no autoflush, which would flush (and so cut) every print
    PrintStream err = new PrintStream(new MaskingOutputStream(sink), false, StandardCharsets.UTF_8);
    err.print("Opened store on jdbc:postgresql://h/db?pass");
    err.print("word=s3cret&user=u");
    err.println();
    err.println("caused by: jdbc:postgresql://u:s3cret@h/db refused");
    new IllegalStateException("cannot open jdbc:postgresql://h/db?password=s3cret").printStackTrace(err);
    String text = sink.toString(StandardCharsets.UTF_8);
    assertThat(text).doesNotContain("s3cret")
        .contains("Opened store on jdbc:postgresql://h/db?password=***&user=u\n")
        .contains("caused by: jdbc:postgresql://u:***@h/db refused\n")
        .contains("java.lang.IllegalStateException: cannot open jdbc:postgresql://h/db?password=***\n");
  }

  @Test
  void aLineWithNothingToMaskIsWrittenByteForByte() throws Exception {
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m = new MaskingOutputStream(sink);
    byte[] notUtf8 = {'a', (byte) 0xff, (byte) 0xc3, 'b', '\n', 'c'};
    m.write(notUtf8);
    assertThat(sink.toByteArray()).containsExactly('a', (byte) 0xff, (byte) 0xc3, 'b', '\n');
    m.flush(); // the unfinished line goes out on flush
    assertThat(sink.toByteArray()).containsExactly(notUtf8);
  }

  @Test
  void aVeryLongLineIsNeverCutInsideAPassword() throws Exception {
    // a line longer than what is held, with a URL across the point where it is written out
    String url = "jdbc:postgresql://u:s3cret@h/db and ?password=s3cret ";
    for (int shift = 0; shift < url.length(); shift++) {
      ByteArrayOutputStream sink = new ByteArrayOutputStream();
      PrintStream err = new PrintStream(new MaskingOutputStream(sink), false, StandardCharsets.UTF_8);
      String before = "x ".repeat((MaskingOutputStream.MAX_LINE - shift) / 2);
      err.print(before + url + "y".repeat(100));
      err.println();
      err.flush();
      String text = sink.toString(StandardCharsets.UTF_8);
      assertThat(text).as("URL at %d", before.length()).doesNotContain("s3cret")
          .endsWith("jdbc:postgresql://u:***@h/db and ?password=*** " + "y".repeat(100) + "\n")
          .hasSize(before.length() + url.length() - 12 + 6 + 101);
    }
  }

  @Test
  void aVeryLongLineWithoutBlanksIsHeldRatherThanCutInsideAPassword() throws Exception {
    for (String url : List.of("jdbc:postgresql://u:s3cret@h/db", "jdbc:postgresql://h/db?password=s3cret&x=1")) {
      for (int shift = 0; shift < url.length(); shift++) {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        PrintStream err = new PrintStream(new MaskingOutputStream(sink), false, StandardCharsets.UTF_8);
        // minified JSON: no blank, but quotes; and a run of characters with neither
        String json = "{\"a\":\"b\"}".repeat((MaskingOutputStream.MAX_LINE - shift) / 20);
        String run = "x".repeat(MaskingOutputStream.MAX_LINE - shift);
        for (String before : List.of(json, run)) {
          sink.reset();
          err.print(before + url + "y".repeat(100));
          err.println();
          err.flush();
          assertThat(sink.toString(StandardCharsets.UTF_8)).as("URL at %d", before.length())
              .doesNotContain("s3cret").contains("***").endsWith("y".repeat(100) + "\n");
        }
      }
    }
  }

  @Test
  void aVeryLongLineIsWrittenWithoutWaitingForItsEnd() throws Exception {
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m = new MaskingOutputStream(sink);
    byte[] words = "ab ".repeat(MaskingOutputStream.MAX_LINE / 3 + 10).getBytes(StandardCharsets.US_ASCII);
    m.write(words);
    assertThat(sink.size()).as("up to the last blank").isEqualTo(words.length);
    sink.reset();
    m.write(new byte[MaskingOutputStream.MAX_LINE + 10]); // no blank or quote: held
    assertThat(sink.size()).isZero();
    m.write(new byte[MaskingOutputStream.MAX_HELD]);
    assertThat(sink.size()).as("written once the most is held").isEqualTo(MaskingOutputStream.MAX_HELD + MaskingOutputStream.MAX_LINE + 10);
  }

  @Test
  @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // the old stream: hours
  void aLongLineWrittenByteByByteIsLookedAtOnce() throws Exception {
    // base64 or a hex dump, say: no blank or quote for a megabyte, written a byte at a time (as a
    // logger writing through an unbuffered stream may), with a URL and blanks further on
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m = new MaskingOutputStream(sink);
    String run = "x".repeat(MaskingOutputStream.MAX_HELD - 1000);
    String rest = "ab jdbc:postgresql://u:s3cret@h/db cd " + "y".repeat(MaskingOutputStream.MAX_LINE) + "\n";
    for (byte b : (run + rest).getBytes(StandardCharsets.US_ASCII)) {
      m.write(b);
    }
    String text = sink.toString(StandardCharsets.US_ASCII);
    assertThat(text).doesNotContain("s3cret")
        .isEqualTo(run + rest.replace("s3cret", "***"));
  }

  @Test
  void aBlankArrivingAfterALongHeldRunIsWhereTheLineIsCut() throws Exception {
    // the run is held in pieces; the first blank comes with a later write, and the URL after it
    // is held whole until its end
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    MaskingOutputStream m = new MaskingOutputStream(sink);
    byte[] piece = "z".repeat(1000).getBytes(StandardCharsets.US_ASCII);
    for (int i = 0; i < 70; i++) {
      m.write(piece);
    }
    assertThat(sink.size()).as("no blank yet: held").isZero();
    m.write(" jdbc:postgresql://u:s3cr".getBytes(StandardCharsets.US_ASCII));
    assertThat(sink.size()).as("written up to the blank").isEqualTo(70_001);
    m.write("et@h/db\n".getBytes(StandardCharsets.US_ASCII));
    assertThat(sink.toString(StandardCharsets.US_ASCII))
        .isEqualTo("z".repeat(70_000) + " jdbc:postgresql://u:***@h/db\n");
  }
}
