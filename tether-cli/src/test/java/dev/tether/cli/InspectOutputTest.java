package dev.tether.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tether.jdbc.Lease;
import dev.tether.jdbc.LeaseManager;
import dev.tether.jdbc.NewWorkItem;
import dev.tether.jdbc.TetherStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code inspect}'s table prints each delivery and checkpoint once and the item's whole error. */
class InspectOutputTest {
  @TempDir Path dir;

  private String inspect(String db, long id) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = TetherCli.execute(new String[] {"inspect", "--db", db, Long.toString(id)},
        new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).as(err.toString()).isZero();
    return out.toString();
  }

  @Test
  void eachRowOnceAndTheWholeError() {
    String db = dir.resolve("t.db").toString();
    String summary = "exit status 2: " + "x".repeat(300) + " the end of a long first line";
    String error = summary + "\n--- stderr (tail) ---\nlast words";
    long id;
    try (TetherStore s = TetherStore.open(db)) {
      LeaseManager lm = new LeaseManager(s, "test");
      id = lm.enqueue(NewWorkItem.builder("default")
          .input("{\"argv\":[\"false\"],\"shell\":false,\"liveness\":\"output\",\"env\":{}}")
          .maxAttempts(1).build());
      Lease l = lm.acquire("default", Duration.ofMinutes(1)).orElseThrow();
      lm.release(l.itemId(), l.token(), false, null, error);
    }
    String out = inspect(db, id);
    assertThat(out).contains("error:            failed on attempt 1 of 1: " + summary + "\n")
        .contains("--- stderr (tail) ---\nlast words");
    assertThat(out.split("released_failed", -1)).as(out).hasSize(2); // one row: the delivery's
  }
}
