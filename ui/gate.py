"""The optional password gate of a hosted app: a password box before any page, when a password is set.

The password comes from st.secrets ("password") or $KNEEPOINT_PASSWORD (engine.hosting); without one
there is no gate. A session that gave the right password keeps a digest of it, not the password, and
is asked again if the deployment's password changes. This keeps a team demo away from passers-by; it is
not user management (no accounts, no rate limit).
"""

from __future__ import annotations

import hashlib
import hmac

import streamlit as st

from engine.hosting import HostingSettings, SettingsError
from ui.session import hide_error_details_when_hosted, hosting
from ui.text import md

_UNLOCKED = "_kneepoint_gate"  # session_state: digest of the password this session gave


def _digest(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def _unlocked(settings: HostingSettings) -> bool:
    if settings.password is None:
        return True
    given = st.session_state.get(_UNLOCKED, "")
    return hmac.compare_digest(given, _digest(settings.password.get_secret_value()))


def unlocked() -> bool:
    """True when this session may see the pages: no password is set, or it has been given. False also when the
    settings cannot be read (ask_password then says what is wrong)."""
    try:
        return _unlocked(hosting())
    except SettingsError:
        return False


def ask_password() -> None:
    """Show the password box (or what is wrong with the hosting settings) and stop the script; the right
    password unlocks this session and reruns the app."""
    try:
        settings = hosting()
    except SettingsError as e:
        st.error(f"This deployment is not set up right, so the app stays closed: {md(e)}.")
        st.stop()
    st.title("Kneepoint")
    st.caption("This team demo is protected by a password. Ask the person who shared the link.")
    with st.form("gate", clear_on_submit=True):
        given = st.text_input("Password", type="password", key="gate_password")
        entered = st.form_submit_button("Enter")
    if entered:
        expected = settings.password.get_secret_value() if settings.password is not None else ""
        if hmac.compare_digest(given.encode(), expected.encode()):
            st.session_state[_UNLOCKED] = _digest(expected)
            st.rerun()
        st.error("That password is not right.")
    st.stop()


def guard_page() -> None:
    """Every page's first line: the gate and the hosted error setting, enforced by the page itself.

    app.py applies both before it runs a page, but a page can run without app.py: Streamlit's legacy pages/ router
    takes a server process's first script run, and a link naming a page file (/report) then runs that file
    directly (tests/test_browser_deeplink.py). `python -m ui.serve` takes that run itself; this covers a bare
    `streamlit run app.py` and anything else that runs a page file on its own.
    """
    hide_error_details_when_hosted()
    if not unlocked():
        ask_password()  # stops the script
