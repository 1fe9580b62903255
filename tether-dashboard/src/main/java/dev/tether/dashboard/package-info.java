/**
 * The Tether dashboard as a library component: {@link dev.tether.dashboard.TetherDashboard}, a
 * JDK {@code HttpHandler} serving one self-contained page and a JSON API over a store, with store
 * work per poll bounded by what it shows.
 */
package dev.tether.dashboard;
