use std::collections::BTreeMap;

use time::Duration;

use super::*;
use crate::testutil::{OK_CA_CERT, T0, fresh, openkruise_secret_data, policy};
use crate::{execute, files_up_to_date, inspect};

/// Plans at `now` and carries the plan out, as one server sync does.
fn sync(bundle: &CertBundle, now: OffsetDateTime, policy: &Policy) -> (CertPlan, CertBundle) {
    let plan = plan(Some(bundle), now, policy);
    let next = execute(&plan, Some(bundle), now, policy).expect("execute");
    (plan, next)
}

fn ders(pem: &str) -> Vec<Vec<u8>> {
    decode_certs(pem, "test").expect("certificates")
}

/// Whether a CA of `bundle`'s caBundle issued `cert_pem`.
fn trusts(bundle: &CertBundle, cert_pem: &str) -> bool {
    let cert = inspect(cert_pem).expect("certificate");
    inspect_all(&bundle.ca_bundle_pem, "bundle")
        .expect("bundle")
        .iter()
        .any(|ca| cert.issued_by(ca))
}

/// The safety property of the rotation: while a change from `before` to `after` propagates, replicas
/// serve either certificate and the apiserver holds either caBundle; every mix must verify.
fn assert_overlap(before: &CertBundle, after: &CertBundle) {
    for served in [&before.cert_pem, &after.cert_pem] {
        for published in [before, after] {
            assert!(
                trusts(published, served),
                "a served certificate is not trusted by a caBundle in flight"
            );
        }
    }
}

/// A bundle whose CA is within `serving_validity + renew_before` of its end, with a current serving
/// certificate: made at T0, its serving certificate re-issued ~8.9 years later. Returns it and the time.
fn bundle_with_ca_near_expiry() -> (CertBundle, OffsetDateTime) {
    let policy = policy();
    let t1 = T0 + Duration::days(3250);
    let (plan1, b1) = sync(&fresh(T0), t1, &policy);
    assert!(matches!(plan1, CertPlan::ReissueServing { .. }), "{plan1}");
    assert_eq!(plan(Some(&b1), t1, &policy), CertPlan::Keep);
    (b1, T0 + Duration::days(3260))
}

#[test]
fn a_fresh_install_without_a_secret_plans_fresh_and_then_keeps() {
    let policy = policy();
    assert_eq!(plan(None, T0, &policy), CertPlan::Fresh);
    let bundle = execute(&CertPlan::Fresh, None, T0, &policy).unwrap();
    assert_eq!(plan(Some(&bundle), T0, &policy), CertPlan::Keep);
    assert_eq!(ders(&bundle.ca_bundle_pem), ders(&bundle.ca_cert_pem));
}

#[test]
fn a_fresh_install_with_the_charts_empty_secret_plans_fresh() {
    let policy = policy();
    let current = CertBundle::from_secret_data(&BTreeMap::new()).unwrap();
    assert_eq!(current, None);
    let plan_now = plan(current.as_ref(), T0, &policy);
    assert_eq!(plan_now, CertPlan::Fresh);
    let bundle = execute(&plan_now, current.as_ref(), T0, &policy).unwrap();
    let reread = CertBundle::from_secret_data(&bundle.to_secret_data())
        .unwrap()
        .unwrap();
    assert_eq!(plan(Some(&reread), T0, &policy), CertPlan::Keep);
}

#[test]
fn a_valid_bundle_is_kept() {
    let bundle = fresh(T0);
    for days in [0, 1, 100, 334] {
        let plan = plan(Some(&bundle), T0 + Duration::days(days), &policy());
        assert_eq!(plan, CertPlan::Keep, "day {days}");
        assert!(!plan.changes_secret());
    }
}

#[test]
fn a_serving_cert_near_expiry_is_reissued_by_the_same_ca() {
    let policy = policy();
    let bundle = fresh(T0);
    let now = T0 + Duration::days(340);
    let (plan, next) = sync(&bundle, now, &policy);
    let CertPlan::ReissueServing { reason } = &plan else {
        panic!("expected ReissueServing, got {plan}");
    };
    assert!(reason.contains("renewal window"), "{reason}");
    assert_eq!(next.ca_cert_pem, bundle.ca_cert_pem);
    assert_eq!(next.ca_key_pem, bundle.ca_key_pem);
    assert_eq!(next.ca_bundle_pem, bundle.ca_bundle_pem);
    assert_ne!(next.cert_pem, bundle.cert_pem);
    let cert = inspect(&next.cert_pem).unwrap();
    assert!(cert.issued_by(&inspect(&bundle.ca_cert_pem).unwrap()));
    assert_eq!(cert.not_after, now + Duration::days(365));
    assert_eq!(super::plan(Some(&next), now, &policy), CertPlan::Keep);
}

#[test]
fn an_expired_serving_cert_is_reissued() {
    let plan = plan(Some(&fresh(T0)), T0 + Duration::days(400), &policy());
    let CertPlan::ReissueServing { reason } = &plan else {
        panic!("expected ReissueServing, got {plan}");
    };
    assert!(reason.contains("expired"), "{reason}");
}

#[test]
fn a_serving_cert_missing_a_policy_name_is_reissued() {
    let bundle = fresh(T0);
    let wider = Policy::new(
        "kruise-webhook-service.kruise-system.svc",
        ["kruise-webhook-service.kruise-system.svc.cluster.local"],
    );
    let (plan, next) = sync(&bundle, T0 + Duration::days(1), &wider);
    let CertPlan::ReissueServing { reason } = &plan else {
        panic!("expected ReissueServing, got {plan}");
    };
    assert!(reason.contains("svc.cluster.local"), "{reason}");
    assert!(
        inspect(&next.cert_pem)
            .unwrap()
            .dns_names
            .contains(&"kruise-webhook-service.kruise-system.svc.cluster.local".to_owned())
    );
    assert_eq!(
        super::plan(Some(&next), T0 + Duration::days(1), &wider),
        CertPlan::Keep
    );
}

#[test]
fn a_serving_cert_with_another_common_name_is_reissued() {
    let mut renamed = policy();
    renamed.common_name = "other.kruise-system.svc".to_owned();
    // The SANs are still covered; only the CN differs.
    let plan = plan(Some(&fresh(T0)), T0, &renamed);
    let CertPlan::ReissueServing { reason } = &plan else {
        panic!("expected ReissueServing, got {plan}");
    };
    assert!(reason.contains("common name"), "{reason}");
}

#[test]
fn a_serving_key_that_does_not_match_its_cert_is_reissued() {
    let mut bundle = fresh(T0);
    bundle.key_pem = fresh(T0).key_pem;
    let plan = plan(Some(&bundle), T0, &policy());
    assert_eq!(
        plan,
        CertPlan::ReissueServing {
            reason: "key.pem does not match cert.pem".to_owned()
        }
    );
}

#[test]
fn a_serving_cert_from_a_foreign_ca_is_reissued() {
    let mut bundle = fresh(T0);
    let foreign = fresh(T0);
    bundle.cert_pem = foreign.cert_pem;
    bundle.key_pem = foreign.key_pem;
    let (plan, next) = sync(&bundle, T0, &policy());
    assert_eq!(
        plan,
        CertPlan::ReissueServing {
            reason: "the serving certificate is not signed by a CA of the bundle".to_owned()
        }
    );
    assert!(trusts(&next, &next.cert_pem));
}

#[test]
fn a_ca_near_expiry_rotates_with_old_and_new_ca_in_the_bundle_until_the_old_is_unused() {
    let policy = policy();
    let p = policy.propagation;
    let (before, t2) = bundle_with_ca_near_expiry();
    let old_ca = ders(&before.ca_cert_pem).remove(0);

    // Start: a new CA signs from now on; the bundle trusts both; the old serving cert stays.
    let (plan2, started) = sync(&before, t2, &policy);
    let CertPlan::StartCaRotation { reason } = &plan2 else {
        panic!("expected StartCaRotation, got {plan2}");
    };
    assert!(reason.contains("too soon"), "{reason}");
    let new_ca = ders(&started.ca_cert_pem).remove(0);
    assert_ne!(new_ca, old_ca);
    assert_eq!(
        ders(&started.ca_bundle_pem),
        [old_ca.clone(), new_ca.clone()]
    );
    assert_eq!(started.cert_pem, before.cert_pem);
    assert_eq!(started.key_pem, before.key_pem);
    assert_overlap(&before, &started);
    let new_ca_info = inspect(&started.ca_cert_pem).unwrap();
    assert_eq!(new_ca_info.not_after, t2 + Duration::days(3650));

    // The new CA propagates: nothing to do yet.
    assert_eq!(
        plan(Some(&started), t2 + p - Duration::seconds(1), &policy),
        CertPlan::Keep
    );

    // Promote: the serving cert now chains to the new CA; both CAs are still trusted.
    let (plan3, promoted) = sync(&started, t2 + p, &policy);
    assert_eq!(plan3, CertPlan::PromoteNewCa);
    assert!(inspect(&promoted.cert_pem).unwrap().issued_by(&new_ca_info));
    assert_eq!(ders(&promoted.ca_bundle_pem), [old_ca, new_ca.clone()]);
    assert_eq!(promoted.ca_cert_pem, started.ca_cert_pem);
    assert_overlap(&started, &promoted);

    // The new serving cert propagates: nothing to do yet.
    assert_eq!(
        plan(Some(&promoted), t2 + p + p - Duration::seconds(1), &policy),
        CertPlan::Keep
    );

    // Finish: only the new CA is trusted.
    let (plan4, finished) = sync(&promoted, t2 + p + p, &policy);
    assert_eq!(plan4, CertPlan::FinishCaRotation);
    assert_eq!(ders(&finished.ca_bundle_pem), [new_ca]);
    assert_eq!(finished.cert_pem, promoted.cert_pem);
    assert_overlap(&promoted, &finished);

    for later in [Duration::ZERO, Duration::days(30), Duration::days(300)] {
        assert_eq!(
            plan(Some(&finished), t2 + p + p + later, &policy),
            CertPlan::Keep
        );
    }
}

#[test]
fn a_stale_serving_cert_mid_rotation_waits_for_the_promotion() {
    let (before, t2) = bundle_with_ca_near_expiry();
    let (_, started) = sync(&before, t2, &policy());
    let wider = Policy::new(
        "kruise-webhook-service.kruise-system.svc",
        ["kruise-webhook-service"],
    );
    assert_eq!(plan(Some(&started), t2, &wider), CertPlan::Keep);
    let (plan, promoted) = sync(&started, t2 + wider.propagation, &wider);
    assert_eq!(plan, CertPlan::PromoteNewCa);
    assert!(
        inspect(&promoted.cert_pem)
            .unwrap()
            .dns_names
            .contains(&"kruise-webhook-service".to_owned())
    );
}

#[test]
fn a_broken_serving_cert_mid_rotation_is_reissued_from_the_new_ca_at_once() {
    let (before, t2) = bundle_with_ca_near_expiry();
    let (_, mut started) = sync(&before, t2, &policy());
    started.key_pem = fresh(T0).key_pem;
    let (plan, next) = sync(&started, t2, &policy());
    assert!(matches!(plan, CertPlan::ReissueServing { .. }), "{plan}");
    assert!(
        inspect(&next.cert_pem)
            .unwrap()
            .issued_by(&inspect(&started.ca_cert_pem).unwrap())
    );
}

#[test]
fn an_unusable_ca_that_is_still_valid_rotates_with_overlap() {
    let policy = policy();
    let mut bundle = fresh(T0);
    bundle.ca_key_pem = fresh(T0).ca_key_pem;
    let now = T0 + Duration::days(1);
    let (plan, started) = sync(&bundle, now, &policy);
    let CertPlan::StartCaRotation { reason } = &plan else {
        panic!("expected StartCaRotation, got {plan}");
    };
    assert!(reason.contains("ca-key.pem"), "{reason}");
    assert_eq!(started.cert_pem, bundle.cert_pem);
    assert_eq!(ders(&started.ca_bundle_pem).len(), 2);
    assert_overlap(&bundle, &started);

    let (plan, promoted) = sync(&started, now + policy.propagation, &policy);
    assert_eq!(plan, CertPlan::PromoteNewCa);
    assert_overlap(&started, &promoted);
    let (plan, finished) = sync(&promoted, now + policy.propagation * 2, &policy);
    assert_eq!(plan, CertPlan::FinishCaRotation);
    assert_overlap(&promoted, &finished);
    assert_eq!(ders(&finished.ca_bundle_pem), ders(&finished.ca_cert_pem));
}

#[test]
fn an_undecodable_ca_key_counts_as_unusable() {
    let mut bundle = fresh(T0);
    bundle.ca_key_pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_owned();
    let plan = plan(Some(&bundle), T0, &policy());
    assert!(matches!(plan, CertPlan::StartCaRotation { .. }), "{plan}");
}

#[test]
fn an_unusable_ca_with_an_expired_serving_cert_is_replaced() {
    let policy = policy();
    let mut bundle = fresh(T0);
    bundle.ca_key_pem = fresh(T0).ca_key_pem;
    let now = T0 + Duration::days(400);
    let (plan, replaced) = sync(&bundle, now, &policy);
    assert!(matches!(plan, CertPlan::Replace { .. }), "{plan}");
    assert_ne!(ders(&replaced.ca_cert_pem), ders(&bundle.ca_cert_pem));
    assert_eq!(ders(&replaced.ca_bundle_pem), ders(&replaced.ca_cert_pem));
    assert_eq!(super::plan(Some(&replaced), now, &policy), CertPlan::Keep);
}

#[test]
fn an_expired_ca_is_replaced() {
    let policy = policy();
    let bundle = fresh(T0);
    let now = T0 + Duration::days(3651);
    let (plan, replaced) = sync(&bundle, now, &policy);
    let CertPlan::Replace { reason } = &plan else {
        panic!("expected Replace, got {plan}");
    };
    assert!(reason.starts_with("the CA expired at"), "{reason}");
    assert_eq!(ders(&replaced.ca_bundle_pem), ders(&replaced.ca_cert_pem));
    assert_eq!(super::plan(Some(&replaced), now, &policy), CertPlan::Keep);
}

#[test]
fn expired_previous_cas_are_not_carried_over_and_leave_at_finish() {
    let policy = policy();
    let mut short = policy.clone();
    short.ca_validity = Duration::days(10);
    let expired = execute(&CertPlan::Fresh, None, T0 - Duration::days(20), &short).unwrap();
    let mut bundle = fresh(T0);
    bundle.ca_bundle_pem = format!("{}{}", bundle.ca_cert_pem, expired.ca_cert_pem);

    // The serving cert is younger than `propagation`: other replicas may still serve an older one.
    assert_eq!(plan(Some(&bundle), T0, &policy), CertPlan::Keep);
    let (plan_later, finished) = sync(&bundle, T0 + Duration::days(1), &policy);
    assert_eq!(plan_later, CertPlan::FinishCaRotation);
    assert_eq!(ders(&finished.ca_bundle_pem), ders(&bundle.ca_cert_pem));

    let mut unusable = bundle.clone();
    unusable.ca_key_pem = fresh(T0).ca_key_pem;
    let (plan_start, started) = sync(&unusable, T0 + Duration::days(1), &policy);
    assert!(
        matches!(plan_start, CertPlan::StartCaRotation { .. }),
        "{plan_start}"
    );
    let carried = ders(&started.ca_bundle_pem);
    assert_eq!(carried.len(), 2);
    assert!(!carried.contains(&ders(&expired.ca_cert_pem)[0]));
}

#[test]
fn racing_replicas_end_on_the_ca_of_the_secret_that_won() {
    let policy = policy();
    // Both replicas find no Secret and plan Fresh; their bundles differ.
    assert_eq!(plan(None, T0, &policy), CertPlan::Fresh);
    let a = execute(&CertPlan::Fresh, None, T0, &policy).unwrap();
    let b = execute(&CertPlan::Fresh, None, T0, &policy).unwrap();
    assert_ne!(a.ca_cert_pem, b.ca_cert_pem);
    // A's create wins; B gets AlreadyExists, re-reads the Secret and finds A.
    let secret = CertBundle::from_secret_data(&a.to_secret_data())
        .unwrap()
        .unwrap();
    assert_eq!(plan(Some(&secret), T0, &policy), CertPlan::Keep);
    // B had written its own files already: they lose to the Secret.
    assert!(!files_up_to_date(&secret, Some(&b)));
    assert!(files_up_to_date(&secret, Some(&a)));
}

#[test]
fn an_openkruise_rsa_secret_is_kept_while_valid() {
    let policy = policy();
    let bundle = CertBundle::from_secret_data(&openkruise_secret_data())
        .unwrap()
        .unwrap();
    let ca = inspect(OK_CA_CERT).unwrap();
    for days in [0, 1, 365, 5 * 365] {
        let now = ca.not_before + Duration::days(days);
        assert_eq!(
            plan(Some(&bundle), now, &policy),
            CertPlan::Keep,
            "day {days}"
        );
    }
}

#[test]
fn an_openkruise_rsa_ca_signs_a_reissued_serving_cert_and_is_kept() {
    let wider = Policy::new(
        "kruise-webhook-service.kruise-system.svc",
        ["kruise-webhook-service.kruise-system.svc.cluster.local"],
    );
    let bundle = CertBundle::from_secret_data(&openkruise_secret_data())
        .unwrap()
        .unwrap();
    let ca = inspect(OK_CA_CERT).unwrap();
    let now = ca.not_before + Duration::days(1);
    let (plan, next) = sync(&bundle, now, &wider);
    assert!(matches!(plan, CertPlan::ReissueServing { .. }), "{plan}");
    // The RSA CA stays as it was, PKCS#1 key and all.
    assert_eq!(next.ca_cert_pem, bundle.ca_cert_pem);
    assert_eq!(next.ca_key_pem, bundle.ca_key_pem);
    assert_eq!(next.ca_bundle_pem, bundle.ca_bundle_pem);
    let cert = inspect(&next.cert_pem).unwrap();
    assert!(cert.issued_by(&ca));
    assert_eq!(cert.not_after, now + Duration::days(365));
    let reread = CertBundle::from_secret_data(&next.to_secret_data())
        .unwrap()
        .unwrap();
    assert_eq!(super::plan(Some(&reread), now, &wider), CertPlan::Keep);
}

#[test]
fn an_openkruise_rsa_ca_near_expiry_rotates_to_an_ecdsa_ca_with_overlap() {
    let policy = policy();
    let bundle = CertBundle::from_secret_data(&openkruise_secret_data())
        .unwrap()
        .unwrap();
    let ca = inspect(OK_CA_CERT).unwrap();
    let now = ca.not_after - Duration::days(100);
    let (plan, started) = sync(&bundle, now, &policy);
    assert!(matches!(plan, CertPlan::StartCaRotation { .. }), "{plan}");
    assert_eq!(ders(&started.ca_bundle_pem).len(), 2);
    assert!(
        started
            .ca_key_pem
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    assert_overlap(&bundle, &started);
    let (plan, promoted) = sync(&started, now + policy.propagation, &policy);
    assert_eq!(plan, CertPlan::PromoteNewCa);
    assert_overlap(&started, &promoted);
}

#[test]
fn garbage_in_a_bundle_gives_a_plan_not_a_panic() {
    let policy = policy();
    let good = fresh(T0);
    let all_garbage = CertBundle {
        ca_cert_pem: "garbage".to_owned(),
        ca_key_pem: "garbage".to_owned(),
        cert_pem: "garbage".to_owned(),
        key_pem: "garbage".to_owned(),
        ca_bundle_pem: "garbage".to_owned(),
    };
    assert!(matches!(
        plan(Some(&all_garbage), T0, &policy),
        CertPlan::Replace { .. }
    ));
    let bad_cert = CertBundle {
        cert_pem: "garbage".to_owned(),
        ..good.clone()
    };
    assert!(matches!(
        plan(Some(&bad_cert), T0, &policy),
        CertPlan::ReissueServing { .. }
    ));
    let bad_bundle = CertBundle {
        ca_bundle_pem: "garbage".to_owned(),
        ..good.clone()
    };
    let (plan, repaired) = sync(&bad_bundle, T0, &policy);
    assert_eq!(plan, CertPlan::FinishCaRotation);
    assert_eq!(repaired.ca_bundle_pem, good.ca_cert_pem);
}

#[test]
fn plans_name_themselves_for_logs() {
    let plan = CertPlan::ReissueServing {
        reason: "expired".to_owned(),
    };
    assert_eq!(plan.to_string(), "reissue_serving: expired");
    assert_eq!(CertPlan::PromoteNewCa.to_string(), "promote_new_ca");
    assert!(plan.changes_secret());
}
