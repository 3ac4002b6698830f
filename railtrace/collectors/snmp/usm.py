"""Configured credentials -> pysnmp's USM protocol identifiers and auth data."""

from __future__ import annotations

from typing import Any

from pysnmp.hlapi.v3arch.asyncio import auth as hlauth

from railtrace.collectors.snmp.config import SnmpTarget, UsmCredentials

AUTH_PROTOCOLS: dict[str, Any] = {
    "MD5": hlauth.USM_AUTH_HMAC96_MD5,
    "SHA": hlauth.USM_AUTH_HMAC96_SHA,
    "SHA224": hlauth.USM_AUTH_HMAC128_SHA224,
    "SHA256": hlauth.USM_AUTH_HMAC192_SHA256,
    "SHA384": hlauth.USM_AUTH_HMAC256_SHA384,
    "SHA512": hlauth.USM_AUTH_HMAC384_SHA512,
}
# Net-snmp's AES-192/AES-256 follow draft-blumenthal-aes-usm-04 (its NEWS file); the "C"
# variants are the Reeder key extension Cisco and others use.
PRIV_PROTOCOLS: dict[str, Any] = {
    "DES": hlauth.USM_PRIV_CBC56_DES,
    "3DES": hlauth.USM_PRIV_CBC168_3DES,
    "AES": hlauth.USM_PRIV_CFB128_AES,
    "AES192": hlauth.USM_PRIV_CFB192_AES_BLUMENTHAL,
    "AES256": hlauth.USM_PRIV_CFB256_AES_BLUMENTHAL,
    "AES192C": hlauth.USM_PRIV_CFB192_AES,
    "AES256C": hlauth.USM_PRIV_CFB256_AES,
}


def usm_arguments(creds: UsmCredentials) -> dict[str, Any]:
    """Keyword arguments for UsmUserData / config.add_v3_user (same names in both)."""
    auth_key = creds.auth_key.get_secret_value() if creds.auth_key else None
    priv_key = creds.priv_key.get_secret_value() if creds.priv_key else None
    return {
        "authKey": auth_key,
        "privKey": priv_key,
        "authProtocol": AUTH_PROTOCOLS[creds.auth_protocol] if auth_key else hlauth.USM_AUTH_NONE,
        "privProtocol": PRIV_PROTOCOLS[creds.priv_protocol] if priv_key else hlauth.USM_PRIV_NONE,
    }


def auth_data(target: SnmpTarget) -> Any:
    """CommunityData (v2c) or UsmUserData (v3) for one poll target."""
    if target.version == "3":
        assert target.v3 is not None  # the model validates it
        return hlauth.UsmUserData(target.v3.user, **usm_arguments(target.v3))
    assert target.community is not None
    return hlauth.CommunityData(target.community.get_secret_value(), mpModel=1)
