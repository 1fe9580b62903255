package dev.tether.jdbc;

/**
 * The database's schema is not the one this code needs, and the store was not allowed to change
 * it: it was migrated by a newer version of Tether than this code supports (upgrade this
 * application's Tether version, or point it at another database), or, when the store only
 * validates the schema ({@link TetherStoreConfig.SchemaMigration#VALIDATE}), it is missing or
 * older (apply the migrations). Nothing was changed. The message names both versions.
 */
public class SchemaVersionException extends TetherStoreException {
  private static final long serialVersionUID = 1L;

  private final int databaseVersion;
  private final int supportedVersion;

  /**
   * Creates the exception.
   *
   * @param databaseVersion the schema version recorded in the database
   * @param supportedVersion the newest version this code supports
   */
  public SchemaVersionException(int databaseVersion, int supportedVersion) {
    super(
        "the database schema is at version "
            + databaseVersion
            + " but this Tether code supports versions up to "
            + supportedVersion
            + "; a newer Tether migrated it. Upgrade Tether in this application (or use another"
            + " database); nothing was changed");
    this.databaseVersion = databaseVersion;
    this.supportedVersion = supportedVersion;
  }

  /** A schema found missing or older by a store that only validates; the message says which. */
  SchemaVersionException(String message, int databaseVersion, int supportedVersion) {
    super(message);
    this.databaseVersion = databaseVersion;
    this.supportedVersion = supportedVersion;
  }

  /**
   * Returns the version recorded in the database (0 when the schema is missing).
   *
   * @return the database version
   */
  public int databaseVersion() {
    return databaseVersion;
  }

  /**
   * Returns the newest version this code supports.
   *
   * @return the supported version
   */
  public int supportedVersion() {
    return supportedVersion;
  }
}
