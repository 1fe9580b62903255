package dev.tether.cli.internal;

import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code --db} value, with the two forms it takes: what the store is opened on, and what may be
 * printed.
 *
 * <p>A PostgreSQL password can come from the URL ({@code ?password=...}, or {@code
 * user:password@host}, which the driver does not read: it is moved to {@code user=} and {@code
 * password=} parameters), from a password file ({@code --db-password-file}), or from the {@code
 * PGPASSWORD} environment variable when neither gives one (as libpq does). A URL with a password
 * and a password file together are a contradiction, refused. The URL the store is opened on
 * carries the password as a {@code password=} parameter, which {@code TetherStore} masks in its
 * own messages.
 *
 * <p>{@link #display()}, and {@link #mask(String)} for any text (error messages, log lines), show
 * every password in a URL as {@value #MASK}: a {@code password=} parameter's value and the
 * password of {@code user:password@}.
 *
 * <p>Immutable.
 */
public final class StoreLocation {
  /** What a masked password is shown as. */
  public static final String MASK = "***";

  private static final String POSTGRES_PREFIX = "jdbc:postgresql://";

  /** A password parameter's value: up to {@code &}, white space, a quote, or ": " (end of a URL in a message). */
  private static final Pattern PASSWORD_PARAMETER =
      Pattern.compile("(?i)(password=)[^&\\s'\"]*?(?=[&\\s'\"]|: |$)");

  /** The password of {@code scheme://user:password@host}: up to the last {@code @} before the path. */
  private static final Pattern USERINFO_PASSWORD =
      Pattern.compile("(?i)(//[^/@\\s:'\"]*:)[^/\\s'\"]*@");

  private final String given;
  private final String openUrl;

  private StoreLocation(String given, String openUrl) {
    this.given = given;
    this.openUrl = openUrl;
  }

  /**
   * Resolves a {@code --db} value and its password sources.
   *
   * @param db the {@code --db} value (or {@code TETHER_DB}): a file path, {@code jdbc:sqlite:} or
   *     {@code jdbc:postgresql://} URL
   * @param passwordFile the {@code --db-password-file}, or null
   * @param pgPassword the {@code PGPASSWORD} environment variable, or null
   * @return the location
   * @throws IllegalArgumentException for a password file with a database that is not PostgreSQL or
   *     whose URL already has a password, or a user given twice (usage errors)
   * @throws Stores.BadStoreException if the password file cannot be read or is empty
   */
  public static StoreLocation of(String db, Path passwordFile, String pgPassword) {
    Objects.requireNonNull(db, "db");
    if (!db.regionMatches(true, 0, POSTGRES_PREFIX, 0, POSTGRES_PREFIX.length())) {
      if (passwordFile != null) {
        throw new IllegalArgumentException(
            "--db-password-file is for a PostgreSQL --db (jdbc:postgresql://...), and --db is "
                + mask(db));
      }
      return new StoreLocation(db, db);
    }
    String rest = db.substring(POSTGRES_PREFIX.length());
    int pathStart = indexOfAny(rest, "/?");
    String authority = pathStart < 0 ? rest : rest.substring(0, pathStart);
    String pathAndQuery = pathStart < 0 ? "" : rest.substring(pathStart);
    String user = null;
    String password = null;
    int at = authority.lastIndexOf('@');
    if (at >= 0) {
      String userInfo = authority.substring(0, at);
      authority = authority.substring(at + 1);
      int colon = userInfo.indexOf(':');
      user = decode(colon < 0 ? userInfo : userInfo.substring(0, colon));
      password = colon < 0 ? null : decode(userInfo.substring(colon + 1));
    }
    boolean queryUser = hasParameter(pathAndQuery, "user");
    boolean queryPassword = hasParameter(pathAndQuery, "password");
    if (user != null && !user.isEmpty() && queryUser) {
      throw new IllegalArgumentException(
          "--db names the user twice (user@host and ?user=): keep one; --db is " + mask(db));
    }
    if ((password != null && queryPassword)) {
      throw new IllegalArgumentException(
          "--db has two passwords (user:password@host and ?password=): keep one; --db is "
              + mask(db));
    }
    if (passwordFile != null && (password != null || queryPassword)) {
      throw new IllegalArgumentException(
          "--db already has a password and --db-password-file gives another: keep one; --db is "
              + mask(db));
    }
    if (passwordFile != null) {
      password = readPasswordFile(passwordFile);
    } else if (password == null && !queryPassword && pgPassword != null && !pgPassword.isEmpty()) {
      password = pgPassword;
    }
    StringBuilder url = new StringBuilder(POSTGRES_PREFIX).append(authority).append(pathAndQuery);
    if (user != null && !user.isEmpty()) {
      appendParameter(url, "user", user);
    }
    if (password != null) {
      appendParameter(url, "password", password);
    }
    return new StoreLocation(db, url.toString());
  }

  /**
   * Returns the location as given, with any password masked: what may be printed.
   *
   * @return the masked location
   */
  public String display() {
    return mask(given);
  }

  /**
   * Returns the URL or path the store is opened on, with the password, if any, as a {@code
   * password=} parameter. Never print it: print {@link #display()}.
   *
   * @return the URL or path
   */
  public String openUrl() {
    return openUrl;
  }

  /**
   * Returns the location as given (a password in it included), for the checks of an SQLite file.
   *
   * @return the {@code --db} value
   */
  public String given() {
    return given;
  }

  /**
   * Masks every password in a URL found in {@code text}: the value of a {@code password=}
   * parameter, and the password of {@code user:password@host}.
   *
   * @param text any text, for example an error message
   * @return the text with each such password shown as {@value #MASK}
   */
  public static String mask(String text) {
    if (text == null || text.isEmpty()) {
      return text;
    }
    String s = text;
    if (s.toLowerCase(Locale.ROOT).contains("password=")) {
      s = PASSWORD_PARAMETER.matcher(s).replaceAll("$1" + Matcher.quoteReplacement(MASK));
    }
    if (s.indexOf('@') >= 0 && s.contains("//")) {
      s = USERINFO_PASSWORD.matcher(s).replaceAll("$1" + Matcher.quoteReplacement(MASK) + "@");
    }
    return s;
  }

  @Override
  public String toString() {
    return display();
  }

  private static String readPasswordFile(Path file) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      String why =
          e instanceof NoSuchFileException
              ? "no such file"
              : e instanceof AccessDeniedException ? "permission denied" : Stores.oneLine(e);
      throw new Stores.BadStoreException(
          "cannot read --db-password-file " + file + ": " + why + "; check the path and that"
              + " this user (" + System.getProperty("user.name") + ") may read it", e);
    }
    int end = text.length();
    while (end > 0 && (text.charAt(end - 1) == '\n' || text.charAt(end - 1) == '\r')) {
      end--; // the line break an editor or "echo" leaves is not part of the password
    }
    if (end == 0) {
      throw new Stores.BadStoreException(
          "--db-password-file " + file + " is empty; write the database password in it");
    }
    return text.substring(0, end);
  }

  private static boolean hasParameter(String pathAndQuery, String name) {
    int q = pathAndQuery.indexOf('?');
    if (q < 0) {
      return false;
    }
    for (String p : pathAndQuery.substring(q + 1).split("&")) {
      int eq = p.indexOf('=');
      String key = eq < 0 ? p : p.substring(0, eq);
      if (key.equalsIgnoreCase(name)) {
        return true;
      }
    }
    return false;
  }

  private static void appendParameter(StringBuilder url, String name, String value) {
    url.append(url.indexOf("?") < 0 ? '?' : '&')
        .append(name)
        .append('=')
        .append(URLEncoder.encode(value, StandardCharsets.UTF_8));
  }

  private static String decode(String s) {
    try {
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return s; // not percent-encoded after all: take it as written
    }
  }

  private static int indexOfAny(String s, String chars) {
    for (int i = 0; i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0) {
        return i;
      }
    }
    return -1;
  }
}
