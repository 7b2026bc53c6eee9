"""Catalog topics, part C: incident response, laptop refresh, database backups, access reviews and partner API
rate limits. Each topic has five scopes; a family is one (topic, scope) pair.

Why this module is long: it is text data (one Topic per block, five topics a file), not logic."""

from __future__ import annotations

from .base import Scope, Topic

CRITICAL_INCIDENT_RESPONSE = Topic(
    key="critical_incident_response",
    title="Critical Incident Response Policy",
    runbook_title="PagerDuty Critical Incident Escalation Runbook",
    topic="critical incident response time",
    phrase="{n} minutes",
    values=(5, 10, 15, 20, 30, 45, 60),
    scopes=(
        Scope("payments", "payments platform services", "Payments Platform Services"),
        Scope("login", "customer login services", "Customer Login Services"),
        Scope("mobile", "mobile banking apps", "Mobile Banking Apps"),
        Scope("warehouse", "warehouse management systems", "Warehouse Management Systems"),
        Scope("corporate_it", "internal corporate IT systems", "Internal Corporate IT Systems"),
    ),
    fact=(
        "Under this policy, a critical incident on {who} must be acknowledged by the on-call incident commander"
        " within {v} of the first page, as set out in section {section}.",
        "The required response time for critical incidents affecting {who} is {v}, measured from the alert"
        " until a commander joins the bridge (section {section}).",
        "When a severity one outage hits {who}, the incident commander has {v} to take ownership and open the"
        " bridge, and every breach is logged on form {form}.",
        "From {date}, on-call engineers for {who} have {v} to respond to a critical page before it escalates to"
        " the duty manager on extension {ext}.",
        "Critical incidents raised against {who} carry a response target of {v}, and each missed target is"
        " discussed by the reliability board in room {room}.",
        "Section {section} sets the critical incident response time for {who} at {v}; the clock starts when the"
        " monitoring system pages the primary on-call.",
    ),
    scope=(
        "The {doc} covers {who} and the roughly {headcount} engineers who hold a rotation for them, including"
        " weekend and public holiday cover.",
        "Only the highest priority level on {who} falls under this rule; lower levels follow the standard triage"
        " process in section {section}.",
        "Planned maintenance on {who} is excluded, provided the change was approved at least {days} working days"
        " ahead and announced to customer support.",
        "Security breaches on {who} follow this policy and the data breach procedure together, as agreed in the"
        " revision published on {date}.",
        "Third-party supplier failures that degrade {who} are in scope once they reach the top rating, and the"
        " supplier case is tracked on form {form} next to our own record.",
    ),
    procedure=(
        "To declare an emergency on {who}, open a record in the tracking tool, notify the lead rotation and quote"
        " the ticket reference, such as {ticket}.",
        "The incident commander for {who} posts status updates in the incident channel at regular intervals and"
        " files the timeline on form {form} at closure.",
        "Within {days} working days of resolving a critical incident on {who}, the owning team holds a blameless"
        " review and records the actions in the tracker.",
        "If nobody acknowledges a page for {who}, the person who raised it phones the operations bridge on"
        " extension {ext} and asks for the duty manager.",
        "On-call engineers for {who} keep their phone reachable and their laptop at hand for the whole shift, as"
        " described in section {section} of the handbook.",
    ),
    contacts=(
        "Incident Management owns the {doc} for {who}; questions go to the #incident-process channel or to"
        " extension {ext} in office hours.",
        "The Head of Reliability revisits this rule for {who} every quarter, and the latest review was signed off"
        " on {date}.",
        "Disputes about whether an incident on {who} was really critical are escalated to the reliability board,"
        " which meets weekly in room {room}.",
        "Amendments to the {doc} for {who} are raised under a ticket such as {ticket} and require sign-off from"
        " the service owner and the process owner.",
        "Roughly {headcount} engineers on the rotas behind {who} receive amendments by email, and the owner contact"
        " is listed in section {section}.",
    ),
    runbook_step=(
        "In PagerDuty, open the escalation policy for {who} and make its first rule escalate when a critical"
        " page is not acknowledged within {v} ({ticket}).",
        "Edit the high-urgency settings of the PagerDuty services for {who} so that the acknowledgement timeout"
        " is {v}, then record the edit on form {form}.",
        "Set the response target of the PagerDuty incident workflow for {who} to {v}, matching section {section}"
        " of the policy, and publish the workflow.",
        "Under Services in PagerDuty, change the escalation delay for critical alerts from {who} to {v} and note"
        " it in the change log of {date}.",
        "Update the PagerDuty business service for {who} so that critical incidents reach the duty manager after"
        " {v} without acknowledgement ({headcount} responders).",
    ),
    runbook_prereq=(
        "You must hold the PagerDuty Manager role on the services for {who} and an approved change ticket, for"
        " example {ticket}, before touching any notification rules.",
        "Export the existing routing rules for {who} from PagerDuty and attach the export to form {form} so the"
        " previous settings can be restored.",
        "The service owner for {who} must approve the change at least {days} working days before it goes live,"
        " unless Incident Management grants an exception.",
        "Confirm that every on-call schedule behind {who} has at least two responders per shift, as required by"
        " section {section} of the incident handbook.",
        "Book the change window with the operations desk on extension {ext} so that no live emergency on {who} is"
        " open while the rota configuration is edited.",
    ),
    runbook_verify=(
        "Fire a test notification on a sandbox copy of {who} and confirm in PagerDuty that the hand-off happens at"
        " the new threshold; attach the result to {ticket}.",
        "Check the PagerDuty analytics report for {who} over the next {days} working days and confirm that"
        " acknowledgement breaches follow the updated rule.",
        "Ask the duty manager on extension {ext} to confirm that the test escalation for {who} reached them at the"
        " expected moment, and close the change.",
        "Compare the PagerDuty routing rules for {who} with section {section} of the handbook and record the"
        " outcome of the comparison on form {form}.",
        "Review the PagerDuty audit log entries dated {date} and make sure that only the configuration for {who}"
        " was changed during the window.",
    ),
    questions=(
        "How quickly must someone respond to a critical incident on {who}?",
        "What is the current response time for severity one outages affecting {who}?",
        "For {who}, how long does the incident commander have to pick up a critical page?",
        "What's the response SLA for top-priority incidents on {who} right now?",
        "If {who} go down completely, how fast do we need to engage?",
        "Which acknowledgement deadline applies today to major outages in {who}?",
        "How many minutes can pass before a critical alert for {who} has to be answered?",
        "Under the current policy, what is the maximum time to react when {who} have a critical incident?",
        "I'm on call for {who} this week: how soon after a sev one page do I need to be on the bridge?",
    ),
    historical_questions=(
        "What was the critical incident response time for {who} on {date}?",
        "As of {date}, how quickly did on-call staff have to respond to critical outages on {who}?",
        "Back on {date}, which acknowledgement deadline applied to severity one incidents for {who}?",
    ),
    dependent_questions=(
        "What acknowledgement timeout should the PagerDuty escalation policy for {who} use?",
        "Which escalation delay do I configure in PagerDuty for critical alerts from {who}?",
        "In PagerDuty, what response target must be set on the services for {who}?",
        "How long should PagerDuty wait before escalating an unacknowledged critical incident on {who}?",
    ),
)

LAPTOP_REPLACEMENT = Topic(
    key="laptop_replacement",
    title="Laptop Replacement Policy",
    runbook_title="Jamf Pro Laptop Refresh Runbook",
    topic="laptop replacement cycle",
    phrase="{n} months",
    values=(18, 24, 30, 36, 42, 48, 60),
    scopes=(
        Scope("engineers", "software engineers", "Software Engineers"),
        Scope("field_sales", "field sales representatives", "Field Sales Representatives"),
        Scope("contact_centre", "contact centre agents", "Contact Centre Agents"),
        Scope("creative", "creative studio staff", "Creative Studio Staff"),
        Scope("executives", "senior executives", "Senior Executives"),
    ),
    fact=(
        "Company laptops issued to {who} are replaced after {v} in service, counted from the delivery date in the"
        " asset register, as stated in section {section}.",
        "Under the version published on {date}, {who} become eligible for a new laptop once their current device"
        " is {v} old, whatever its condition.",
        "The laptop replacement cycle for {who} is {v}, and IT Workplace invites the roughly {headcount} people"
        " concerned to order a new device at that age.",
        "A laptop assigned to {who} is due for refresh {v} after purchase, and a refresh order placed on form"
        " {form} is then approved without manager sign-off.",
        "IT replaces the laptops of {who} once they have been in use for {v}; a device that fails earlier is"
        " handled by the hardware desk on extension {ext}.",
        "Section {section} fixes the refresh interval for {who} at {v}, and no exception to that age limit is"
        " granted without a ticket such as {ticket}.",
    ),
    scope=(
        "The {doc} covers corporate-owned machines assigned to {who}, around {headcount} units in total, while"
        " contractor machines and test equipment are excluded.",
        "Loaner laptops and shared meeting-room devices are outside this rule for {who} and are refreshed by"
        " facilities under section {section}.",
        "Machines of {who} that are lost, stolen or damaged beyond repair go through the incident process on form"
        " {form} instead of the scheduled programme.",
        "Joiners among {who} receive a machine from existing stock, and its time in service counts from its first"
        " delivery into stock, as clarified on {date}.",
        "Monitors, docks and headsets used by {who} are not covered; peripheral requests go through the"
        " accessories catalogue and ship within {days} working days.",
    ),
    procedure=(
        "Once IT emails an ordering link to {who}, pick a model from the catalogue and hand back the previous"
        " machine within {days} working days of delivery.",
        "To ask for an early refresh, {who} fill in form {form} with a short business reason and send it to"
        " their line manager for approval.",
        "Before handing back a laptop, {who} back up local files to the company drive and sign out of all"
        " accounts, as described in section {section}.",
        "Returned laptops from {who} are wiped and reassigned as loaners or sent to the certified recycler; drop"
        " them off at the IT bar in room {room}.",
        "Shipping for remote {who} is arranged by the hardware desk on extension {ext}, which includes a prepaid"
        " return box with each delivered machine.",
    ),
    contacts=(
        "IT Workplace owns the {doc}; {who} can ask about refresh eligibility in the #it-help channel or call the"
        " hardware desk on extension {ext}.",
        "The IT Asset Management team revisits this standard for {who} once a year, and the most recent review was"
        " approved on {date}.",
        "Escalations about delayed laptop deliveries to {who} go to the Workplace Services manager, quoting the"
        " original request number such as {ticket}.",
        "Budget questions about laptops for {who} are handled by Finance Procurement, who hold office hours on"
        " Thursdays in room {room}.",
        "The policy owner for {who} is listed in section {section}, and any proposed change is first circulated"
        " to the roughly {headcount} employees affected.",
    ),
    runbook_step=(
        "In Jamf Pro, edit the Refresh Due smart group for {who} so it includes every laptop whose purchase date"
        " is more than {v} ago, and save under {ticket}.",
        "Set the device age criterion of the Jamf Pro refresh group for {who} to {v}, matching section {section}"
        " of the policy, then recalculate membership.",
        "Update the Refresh Age extension attribute for {who} in Jamf Pro to {v} and record the old setting on"
        " form {form} before saving the change.",
        "Change the Jamf Pro lifecycle rule for {who} so that laptops are flagged for replacement at {v} of age;"
        " about {headcount} devices are evaluated.",
        "In the Jamf Pro advanced search used for {who}, set the purchase age threshold to {v} and schedule the"
        " refresh report to run from {date}.",
    ),
    runbook_prereq=(
        "You need a Jamf Pro administrator account with edit rights on the inventory objects for {who} and an"
        " approved change ticket, such as {ticket}, from IT Workplace.",
        "Check that acquisition dates are filled in for every machine of {who} in Jamf inventory, and correct"
        " missing records on form {form} first.",
        "Notify the hardware desk on extension {ext} at least {days} working days before the change, so that"
        " stock can be planned for {who}.",
        "Take a snapshot of the existing inventory criteria for {who} and store it in the change folder named in"
        " section {section} of this runbook.",
        "The asset manager must confirm the replacement budget for {who}, covering about {headcount} devices,"
        " before the refresh rule is changed.",
    ),
    runbook_verify=(
        "Open the list of flagged machines for {who} in Jamf Pro and confirm that it matches the asset report"
        " export; attach both files to {ticket}.",
        "Check a recently purchased test laptop enrolled for {who} and confirm that it is not flagged, then note"
        " the result on form {form}.",
        "After {days} working days, confirm that ordering invitations went only to those {who} whose machines"
        " passed the updated limit, and to nobody else.",
        "Compare the number of laptops flagged for {who} with the forecast of about {headcount} devices and"
        " investigate any large difference.",
        "Review the Jamf Pro change history dated {date} and make sure that no inventory object other than those"
        " for {who} was edited.",
    ),
    questions=(
        "How often do {who} get a new laptop?",
        "What is the laptop refresh cycle for {who}?",
        "When does a laptop used by {who} become eligible for replacement?",
        "How old does a work laptop have to be before {who} can swap it for a new one?",
        "I'm one of the {who}; how long until I can upgrade my work computer?",
        "What hardware refresh interval applies to notebooks issued to {who} at the moment?",
        "After how many months is a laptop replaced for {who} under the current rules?",
        "Could you tell me the age at which IT currently retires the laptops of {who}?",
        "Is there a set lifetime for company laptops given to {who}, and what is it now?",
    ),
    historical_questions=(
        "What was the laptop replacement cycle for {who} on {date}?",
        "As of {date}, how often were laptops replaced for {who}?",
        "On {date}, after how long did {who} qualify for a new laptop?",
    ),
    dependent_questions=(
        "What device age should the Jamf Pro refresh smart group for {who} use?",
        "Which purchase age threshold do I set in Jamf Pro to flag the laptops of {who}?",
        "At what age should Jamf Pro mark a laptop belonging to {who} as due for replacement?",
        "What value goes into the Jamf Pro refresh criterion for {who}?",
    ),
)

DATABASE_BACKUP_INTERVAL = Topic(
    key="database_backup_interval",
    title="Database Backup Policy",
    runbook_title="AWS Backup Plan Configuration Runbook",
    topic="database backup interval",
    phrase="every {n} hours",
    values=(2, 3, 4, 6, 8, 12, 24, 48),
    scopes=(
        Scope("billing", "billing databases", "Billing Databases"),
        Scope("orders", "customer order databases", "Customer Order Databases"),
        Scope("payroll", "HR and payroll databases", "HR and Payroll Databases"),
        Scope("analytics", "analytics warehouse databases", "Analytics Warehouse Databases"),
        Scope("catalogue", "product catalogue databases", "Product Catalogue Databases"),
    ),
    fact=(
        "Under section {section}, production {who} must be backed up {v}, and each backup is encrypted and copied"
        " to a second cloud region.",
        "The backup interval for {who} is {v}, which also sets the largest data loss the business accepts after a"
        " failure, with effect from {date}.",
        "Automated snapshots of {who} are taken {v} and kept for the retention period agreed with the data owner;"
        " failed runs are reported under {ticket}.",
        "Production {who} are copied to the backup vault {v}, a rule that protects about {headcount} tables"
        " registered by the data owners.",
        "Database owners must make sure that a full or incremental backup of {who} completes {v}, and any gap is"
        " logged on form {form}.",
        "The backup service creates a restorable copy of {who} {v}, and the database on-call on extension {ext} is"
        " paged whenever a run is missed.",
    ),
    scope=(
        "This policy covers all production {who}, including read replicas that are promoted to primary, about"
        " {headcount} instances in total.",
        "Development and staging copies of {who} are outside this standard and may be rebuilt from seed data, as"
        " described in section {section}.",
        "Any of the {who} that hold personal data also follow the retention rules of the privacy notice revised"
        " on {date}.",
        "Newly created {who} are in scope from their first day in production, and owners register them on form"
        " {form} before go-live.",
        "Archived {who} that are read-only need one final backup only, provided the owner records the archive"
        " decision under a ticket such as {ticket}.",
    ),
    procedure=(
        "Owners of {who} must test a full restore at least once a quarter and record the restore time and the"
        " result on form {form}.",
        "A failed backup of {who} raises an alert to the database on-call, who reruns the job and calls extension"
        " {ext} if it fails a second time.",
        "To change the protection settings of {who}, raise a ticket such as {ticket} with the data owner's"
        " approval and an estimate of the extra storage cost.",
        "Restore requests for {who} must name the point in time needed and are completed within {days} working"
        " days unless the incident is critical.",
        "Backup copies of {who} must never leave the approved regions listed in section {section}, not even for"
        " testing or migration rehearsals.",
    ),
    contacts=(
        "The Database Reliability team owns the {doc} for {who}; ask questions in the #db-reliability channel or"
        " call extension {ext}.",
        "The Data Platform leads revisit this standard for {who} twice a year together with restore test results,"
        " most recently on {date}.",
        "Escalations about missing backups of {who} go to the on-call database manager, quoting the alert ticket,"
        " for example {ticket}.",
        "The backup owner for {who} is named in section {section}, and internal audit gets a monthly summary"
        " covering about {headcount} instances.",
        "Questions about the storage cost of backups for {who} go to the cloud finance team, who meet database"
        " owners in room {room} each month.",
    ),
    runbook_step=(
        "In the AWS Backup console, edit the backup plan for {who} and set the rule frequency so that a recovery"
        " point is created {v}; log it under {ticket}.",
        "Update the schedule expression of the AWS Backup rule covering {who} so it runs {v}, as required by"
        " section {section}, and save the plan.",
        "Set the AWS Backup rule for {who} in the Terraform module so that it fires {v}, then apply the change"
        " once it has been reviewed on form {form}.",
        "Change the backup window of the plan for {who} in AWS Backup so that snapshots start {v}, and keep the"
        " region copy rule from {date}.",
        "In AWS Backup, assign the resource tag of {who} to a rule that runs {v}; about {headcount} instances"
        " carry that tag today.",
    ),
    runbook_prereq=(
        "You need the BackupAdmin IAM role in the production account for {who} and an approved change ticket,"
        " for example {ticket}, before you start.",
        "Confirm that every instance of {who} carries the correct backup tag, and fix missing tags on form {form}"
        " before editing the plan.",
        "Check that the backup vault for {who} has enough storage quota for the new schedule, using the cost"
        " sheet in section {section}.",
        "Inform the database on-call on extension {ext} at least {days} working days before changing the"
        " protection settings of {who}.",
        "Export the existing plan JSON for {who} and keep it with the change record dated {date}, so that the"
        " earlier settings can be restored if needed.",
    ),
    runbook_verify=(
        "The next day, list the snapshots of {who} in the console and confirm that their timestamps match the"
        " updated settings; attach the list to {ticket}.",
        "Watch the monitoring dashboard for {days} working days and confirm that no scheduled task for {who} was"
        " skipped or ended in failure.",
        "Restore one recent recovery point of {who} into a test account and record how long the restore took on"
        " form {form}.",
        "Confirm that copies of {who} appear in the second region vault and that their count matches the"
        " {headcount} protected instances.",
        "Compare the console settings for {who} with section {section} of the handbook and ask the owner on"
        " extension {ext} to sign off on the result.",
    ),
    questions=(
        "How often are {who} backed up?",
        "What is the backup frequency for {who} at the moment?",
        "How many hours can pass between two backups of {who}?",
        "What's the current snapshot schedule for {who}?",
        "If {who} crashed right now, how much data could we lose at most?",
        "How frequently does the backup job run for {who} these days?",
        "Which backup interval do the rules currently require for {who}?",
        "Quick one: how regularly do we take a copy of {who}?",
        "Under today's policy, what is the maximum gap allowed between backups of {who}?",
    ),
    historical_questions=(
        "What was the backup interval for {who} on {date}?",
        "As of {date}, how often were {who} backed up?",
        "On {date}, what backup frequency did the policy require for {who}?",
    ),
    dependent_questions=(
        "What schedule should the AWS Backup plan for {who} use?",
        "How often should the AWS Backup rule create recovery points for {who}?",
        "Which frequency do I enter in the backup plan rule that protects {who}?",
        "What schedule expression belongs in the AWS Backup configuration for {who}?",
    ),
)

ACCESS_REVIEW_CADENCE = Topic(
    key="access_review_cadence",
    title="Access Review Policy",
    runbook_title="SailPoint IdentityNow Certification Runbook",
    topic="access review cadence",
    phrase="every {n} days",
    values=(30, 45, 60, 90, 120, 180, 365),
    scopes=(
        Scope("admins", "privileged administrator accounts", "Privileged Administrator Accounts"),
        Scope("service", "service accounts", "Service Accounts"),
        Scope("finance", "finance application users", "Finance Application Users"),
        Scope("contractors", "contractor accounts", "Contractor Accounts"),
        Scope("customer_data", "customer data store users", "Customer Data Store Users"),
    ),
    fact=(
        "Access held by {who} must be reviewed and recertified {v}, and anything no longer needed is removed, as"
        " required by section {section}.",
        "The access review cadence for {who} is {v}; each campaign lists about {headcount} entitlements for the"
        " responsible managers to approve or revoke.",
        "Managers certify the entitlements of {who} {v} under the version of this policy published on {date}, and"
        " uncertified access is revoked.",
        "A recertification campaign covering {who} is launched {v}, and reviewers then have {days} working days"
        " to complete their decisions.",
        "Per the {doc}, reviews of {who} take place {v}, and evidence of each completed review is kept under the"
        " audit ticket {ticket}.",
        "Every entitlement granted to {who} comes up for review {v}, and the owner signs the result on form"
        " {form} for the auditors.",
    ),
    scope=(
        "The policy applies to {who} on production systems, customer data and financial applications, around"
        " {headcount} accounts at present.",
        "Break-glass sessions opened by {who} are examined after each occasion under the emergency procedure in"
        " section {section}, outside the usual calendar.",
        "Any of the {who} that stay disabled for more than {days} working days leave the campaigns and are"
        " handled by the leaver process instead.",
        "Shared mailboxes and read-only reporting roles are excluded from reviews of {who}, as agreed with the"
        " auditors on {date}.",
        "New systems used by {who} come into scope once the system owner registers them on form {form} with the"
        " identity team.",
    ),
    procedure=(
        "Reviewers close out their worklist for {who} by approving or revoking every listed entitlement within"
        " {days} working days of it opening.",
        "Access of {who} that is not certified by the deadline is revoked automatically and must be requested"
        " again under a new ticket such as {ticket}.",
        "Reviewers who are unsure about an entitlement held by {who} ask the application owner before approving"
        " it, as explained in section {section}.",
        "If a reviewer is absent, the campaign items for {who} are delegated to the next manager, who confirms"
        " the handover by calling extension {ext}.",
        "Revocations for {who} are carried out within one business day and recorded on form {form}, so that the"
        " audit trail matches the campaign.",
    ),
    contacts=(
        "The Identity Governance team owns the {doc}; questions about reviews of {who} go to the #iam-help channel"
        " or to extension {ext}.",
        "The Compliance team revisits this control for {who} each year with internal audit, and the last approval"
        " was recorded on {date}.",
        "Escalations about overdue campaigns for {who} go to the office of the CISO, quoting the campaign ticket,"
        " for example {ticket}.",
        "The policy owner for {who} is named in section {section}, and the roughly {headcount} reviewers"
        " concerned are notified of every change.",
        "Training sessions on certifying {who} are run by Identity Governance each month in room {room} and"
        " recorded for remote staff.",
    ),
    runbook_step=(
        "In SailPoint IdentityNow, edit the certification campaign for {who} and set it to recur {v}, then save"
        " the change under {ticket}.",
        "Set the schedule of the certification template for {who} in SailPoint to run {v}, keeping automatic"
        " revocation on, as section {section} requires.",
        "Update the SailPoint campaign filter for {who} and change its recurrence to {v}; about {headcount}"
        " identities fall under that filter.",
        "Change the SailPoint schedule for {who} so that a new campaign starts {v}, with the first run on or after"
        " {date}.",
        "In the SailPoint admin console, open Certifications, pick the template for {who}, make it recur {v} and"
        " note the old value on form {form}.",
    ),
    runbook_prereq=(
        "You need the SailPoint admin role for identity governance and an approved change request, such as"
        " {ticket}, before editing anything for {who}.",
        "Run a fresh aggregation of all sources feeding {who} and confirm that it finished without errors, as"
        " described in section {section}.",
        "Obtain written approval from Compliance on form {form} at least {days} working days before any"
        " configuration for {who} is altered.",
        "Make sure every identity among {who} has a manager attribute in SailPoint so review items route"
        " correctly; the identity desk is on extension {ext}.",
        "Export the existing setup for {who} and store it with the change record dated {date}, so that the"
        " earlier settings can be restored if needed.",
    ),
    runbook_verify=(
        "Open the SailPoint console entry for {who} and confirm that the next start date matches the updated"
        " setting; attach a screenshot to {ticket}.",
        "After the next campaign launches, check that every reviewer of {who} received items, about {headcount}"
        " in total, and chase any gaps.",
        "Confirm within {days} working days of the next start that automatic revocation is still switched on for"
        " the items concerning {who}.",
        "Compare the SailPoint settings for {who} with section {section} of the handbook and record the sign-off"
        " on form {form}.",
        "Ask Identity Governance on extension {ext} to confirm that the audit report for {who} shows the updated"
        " campaign schedule.",
    ),
    questions=(
        "How often do {who} have to go through an access review?",
        "What is the recertification cycle for {who}?",
        "How frequently must managers certify the permissions of {who}?",
        "When is the access of {who} reviewed under the rules in force today?",
        "What's the current cadence for reviewing entitlements held by {who}?",
        "How many days can pass between two access reviews of {who}?",
        "Do you know how regularly {who} get recertified now?",
        "For {who}, what interval between access certification campaigns is required?",
        "At present, how often should the rights of {who} be checked and confirmed?",
    ),
    historical_questions=(
        "What was the access review cadence for {who} on {date}?",
        "As of {date}, how often were {who} recertified?",
        "On {date}, how frequently did the policy require reviews of {who}?",
    ),
    dependent_questions=(
        "What recurrence should the SailPoint campaign for {who} use?",
        "How often should SailPoint launch certification campaigns for {who}?",
        "Which schedule do I configure in the SailPoint template that covers {who}?",
        "What campaign frequency must be set in SailPoint IdentityNow for {who}?",
    ),
)

API_RATE_LIMIT = Topic(
    key="api_rate_limit",
    title="Partner API Rate Limit Policy",
    runbook_title="Kong Gateway Rate Limiting Runbook",
    topic="partner API rate limit",
    phrase="{n} requests per minute",
    values=(60, 120, 300, 600, 1200, 3000, 6000),
    scopes=(
        Scope("standard", "standard tier partners", "Standard Tier Partners"),
        Scope("premium", "premium tier partners", "Premium Tier Partners"),
        Scope("sandbox", "sandbox integration clients", "Sandbox Integration Clients"),
        Scope("logistics", "logistics carrier partners", "Logistics Carrier Partners"),
        Scope("marketplace", "marketplace reseller partners", "Marketplace Reseller Partners"),
    ),
    fact=(
        "API clients of {who} may send up to {v} to the partner API, and calls above that are rejected with a"
        " throttling error, as set out in section {section}.",
        "The partner API rate limit for {who} is {v} per client credential, effective from the version of this"
        " policy published on {date}.",
        "Traffic from {who} is throttled at {v}, measured over a sliding window, and the limit applies to each of"
        " about {headcount} active API keys.",
        "Each application registered by {who} is allowed {v} across all endpoints; a temporary increase needs an"
        " approved ticket such as {ticket}.",
        "Under this policy, {who} receive a quota of {v}, and sustained overuse is reviewed by the API platform"
        " team at its weekly meeting in room {room}.",
        "The gateway enforces a ceiling of {v} for {who}; bursts above it get retry headers, and partners may"
        " appeal the ceiling on form {form}.",
    ),
    scope=(
        "This policy covers every production API key issued to {who}, around {headcount} credentials, across the"
        " orders, catalogue and tracking endpoints.",
        "Webhooks that we send to {who} are outside this rule, and so are batch file transfers, which follow"
        " section {section} instead.",
        "Internal services calling the partner API on behalf of {who} are exempt when they are registered as"
        " first-party clients on form {form}.",
        "Applications of {who} that share one partner account are limited together, a rule clarified in the"
        " revision published on {date}.",
        "Health-check and token endpoints do not count towards the limits for {who}; developer support on"
        " extension {ext} can confirm other exemptions.",
    ),
    procedure=(
        "To ask for more capacity, {who} submit form {form} with their expected peak load and a named contact for"
        " production incidents.",
        "Clients of {who} must back off and retry after the delay given in the response headers, and persistent"
        " throttling is reported under a ticket such as {ticket}.",
        "Account managers assess capacity applications from {who} within {days} working days and may ask for a"
        " load test in the sandbox first.",
        "Before launching a new integration, {who} confirm in the developer portal that they have read the fair"
        " use rules in section {section}.",
        "If a surge from {who} hurts other clients, the platform on-call may cut their capacity for a while and"
        " phones the named contact from extension {ext}.",
    ),
    contacts=(
        "The API Platform team owns the {doc}; {who} can raise questions through the developer portal or call"
        " partner support on extension {ext}.",
        "Partner Management revisits this rule for {who} every quarter with the platform team, and the latest"
        " review closed on {date}.",
        "Escalations about throttling of {who} during an incident go to the API on-call, quoting the incident"
        " ticket, for example {ticket}.",
        "The account manager for {who} is listed in section {section}, and about {headcount} technical contacts"
        " are notified before any change.",
        "Commercial questions about quotas for {who} are answered by the partnerships desk, which holds weekly"
        " office hours in room {room}.",
    ),
    runbook_step=(
        "In Kong Manager, open the rate-limiting plugin on the consumer group for {who} and set the limit to {v};"
        " log the edit under {ticket}.",
        "Update the declarative Kong configuration for {who} so the rate-limiting plugin allows {v}, then sync it"
        " with decK as described in section {section}.",
        "Set the minute limit of the Kong consumer group for {who} to {v} and record the previous limit on form"
        " {form} before applying it.",
        "Change the Kong rate-limiting policy attached to {who} to {v}, keeping the Redis counter backend, and"
        " schedule the change for {date}.",
        "Through the Kong Admin API, patch the plugin config for {who} to allow {v}; the change affects about"
        " {headcount} consumer credentials.",
    ),
    runbook_prereq=(
        "You need the Kong workspace admin role for partner APIs and an approved change ticket, such as {ticket},"
        " before editing limits for {who}.",
        "Export the existing Kong setup for {who} with decK and attach the file to form {form} so that the"
        " previous settings can be restored.",
        "Notify the technical contacts of {who} at least {days} working days before the limit changes, using the"
        " template in section {section}.",
        "Confirm with the API on-call on extension {ext} that the Redis cluster holding the rate counters for"
        " {who} is healthy before you begin.",
        "Partner Management must approve the new quota for {who} in writing, and the approval must be dated on"
        " or before {date}.",
    ),
    runbook_verify=(
        "Run a load script with a sandbox key mapped to {who} and confirm that rejections begin at the new"
        " threshold; attach the output to {ticket}.",
        "Check the response headers that Kong returns to {who} and confirm that the advertised figure matches"
        " section {section} of the handbook.",
        "Watch the gateway dashboard for {days} working days and confirm that rejected calls from {who} stay"
        " within the expected range.",
        "Compare the settings for {who} across all Kong nodes in every region and record the result of the"
        " comparison on form {form}.",
        "Ask partner support on extension {ext} to confirm that no complaints about unexpected throttling were"
        " raised by {who} after the change.",
    ),
    questions=(
        "What is the API rate limit for {who}?",
        "How many requests per minute can {who} send to the partner API right now?",
        "What request quota applies to {who} at the moment?",
        "At what point does the gateway start throttling traffic from {who}?",
        "We're building an integration for {who}; how many calls a minute are allowed?",
        "What is the current per-minute ceiling on partner API calls for {who}?",
        "How much traffic are {who} permitted before they get throttling errors?",
        "Under today's policy, what's the maximum request rate for {who}?",
        "Can you tell me the throughput allowance that currently applies to {who} on the partner API?",
    ),
    historical_questions=(
        "What was the partner API rate limit for {who} on {date}?",
        "As of {date}, how many requests per minute could {who} make?",
        "On {date}, at what rate were calls from {who} throttled?",
    ),
    dependent_questions=(
        "What per-minute limit should the Kong rate-limiting plugin use for {who}?",
        "Which limit do I set on the Kong consumer group for {who}?",
        "What should the Kong configuration allow per minute for {who}?",
        "At what rate should Kong Gateway throttle calls from {who}?",
    ),
)

TOPICS: tuple[Topic, ...] = (
    CRITICAL_INCIDENT_RESPONSE,
    LAPTOP_REPLACEMENT,
    DATABASE_BACKUP_INTERVAL,
    ACCESS_REVIEW_CADENCE,
    API_RATE_LIMIT,
)
