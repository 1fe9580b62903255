package dev.tether.jackson;

import dev.tether.jdbc.TetherStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

class SqliteJacksonMailboxTest extends JacksonMailboxCompatibilityTest {
  private Path dir;

  @Override
  protected TetherStore openStore() {
    try {
      dir = Files.createTempDirectory("tether-jackson");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return TetherStore.open(dir.resolve("tether.db").toString());
  }

  @Override
  protected void dropStore() {
    for (String f : new String[] {"tether.db", "tether.db-wal", "tether.db-shm"}) {
      dir.resolve(f).toFile().delete();
    }
    dir.toFile().delete();
  }
}
