package dev.tether.jackson;

import dev.tether.jdbc.PostgresTestSchema;
import dev.tether.jdbc.TetherStore;

class PostgresJacksonMailboxTest extends JacksonMailboxCompatibilityTest {
  private PostgresTestSchema schema;

  @Override
  protected TetherStore openStore() {
    schema = new PostgresTestSchema("tether_json_");
    return TetherStore.open(schema.url());
  }

  @Override
  protected void dropStore() {
    schema.close();
  }
}
