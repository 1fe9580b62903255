/** Internals of the JDBC store (SQL dialects, migrations); not API, may change at any time. */
package dev.tether.jdbc.internal;
