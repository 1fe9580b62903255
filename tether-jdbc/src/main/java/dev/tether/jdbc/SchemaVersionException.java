package dev.tether.jdbc;

/**
 * The database's schema was migrated by a newer version of Tether than this code supports.
 * Nothing was changed. Upgrade this application's Tether version (or point it at another
 * database).
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

  /**
   * Returns the version recorded in the database.
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
